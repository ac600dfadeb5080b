"""`envcheck verify node`: flags -> NodeOptions -> verify/node/pipeline.py -> Report.

This module only parses: what runs is the pipeline (also verify/api.py's verify_node).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.node.options import NodeOptions
from envcheck.verify.node.pipeline import verify_node


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_expectation_arguments(parser)
    parser.add_argument(
        "--facts",
        type=Path,
        metavar="FILE",
        help="judge facts saved with --save-facts (from another machine) instead of this one",
    )
    parser.add_argument(
        "--prefix",
        type=Path,
        metavar="DIR",
        help="check the conda env or venv at DIR (its own python collects the facts; "
        "nothing is installed into it)",
    )
    parser.add_argument(
        "--save-facts", type=Path, metavar="FILE", help="write the collected facts as JSON"
    )
    parser.add_argument(
        "--no-plugins", action="store_true", help="skip checks from the envcheck.checks group"
    )
    parser.add_argument(
        "--nagios",
        action="store_true",
        help="prolog / health-check mode: print one line, exit 0 OK, 1 WARNING, 2 CRITICAL, "
        "3 UNKNOWN (envcheck docs slurm)",
    )
    parser.add_argument(
        "--level",
        type=int,
        choices=(1, 2, 3),
        default=1,
        help="1 (default): reads only (NVML, /sys, limits, kernel log), well under a second, no "
        "load. 2: adds a short load per visible GPU through torch or CuPy (memory write/read, "
        "pinned copies; PCIe and NVLink counters under load), about 5 s per GPU. 3: the "
        "cluster's bandwidth measurements, which are `verify cluster --bench`",
    )
    parser.add_argument(
        "--load", action="store_true", help="the same as --level 2 (at least)"
    )
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=4.0,
        metavar="S",
        help="level 2: seconds of copies per GPU (default 4)",
    )
    parser.add_argument(
        "--kernel-log",
        type=Path,
        metavar="FILE",
        help="read Xid lines from this file (a saved dmesg, kern.log, journalctl -k) instead of "
        "/dev/kmsg / dmesg / journalctl -k",
    )


def options_from_args(args: argparse.Namespace) -> NodeOptions:
    """The flags as one NodeOptions: the only place that reads this verb's Namespace."""
    return NodeOptions(
        expect=expect_options_from_args(args),
        facts=args.facts,
        prefix=args.prefix,
        save_facts=args.save_facts,
        plugins=not args.no_plugins,
        level=max(args.level, 2 if args.load else 1),
        load_seconds=args.load_seconds,
        kernel_log=args.kernel_log,
    )


def run(args: argparse.Namespace) -> Report | int:
    if args.list_checks:
        from envcheck.verify.catalog import list_report

        return list_report("node")
    if getattr(args, "nagios", False):
        return _run_nagios(args)
    return verify_node(options_from_args(args))


def _run_nagios(args: argparse.Namespace) -> Report:
    """The report, printed as one Nagios line; whatever stops the check is UNKNOWN (3), not 4."""
    import socket

    from envcheck.errors import EnvcheckError
    from envcheck.report import nagios_report, nagios_unknown

    node = socket.gethostname().split(".")[0]
    try:
        return nagios_report(verify_node(options_from_args(args)), node)
    except EnvcheckError as e:
        return nagios_unknown("envcheck verify node", node, e.message)
    except OSError as e:
        return nagios_unknown("envcheck verify node", node,
                              f"{e.strerror or e}: {e.filename or ''}")
