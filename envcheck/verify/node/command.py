"""`envcheck verify node`: flags -> NodeOptions -> verify/node/pipeline.py -> Report.

This module only parses (the flags are NodeOptions' declared fields): what runs is the
pipeline (also api.py's verify_node).
"""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.node.options import NodeOptions
from envcheck.verify.node.pipeline import verify_node


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_expectation_arguments(parser)
    option.add_arguments(parser, NodeOptions)
    parser.add_argument(
        "--nagios",
        action="store_true",
        help="prolog / health-check mode: print one line, exit 0 OK, 1 WARNING, 2 CRITICAL, "
        "3 UNKNOWN (envcheck docs slurm)",
    )
    parser.add_argument("--load", action="store_true", help="the same as --level 2 (at least)")


def options_from_args(args: argparse.Namespace) -> NodeOptions:
    """The flags as one NodeOptions (--load raises --level to 2)."""
    return option.from_args(NodeOptions, args, expect=expect_options_from_args(args),
                            level=max(args.level, 2 if args.load else 1))


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
