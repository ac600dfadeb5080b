"""`envcheck verify node`: collect this machine's facts, judge them, report."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.inputs import check_regular, load_json_file
from envcheck.report import Measurement, Report, Result, Status
from envcheck.verify.expectations import (
    Expectations,
    add_expectation_arguments,
    expectations_from_args,
)
from envcheck.verify.facts import (
    NodeFacts,
    collect_node_facts,
    conda_platform,
    facts_from_dict,
    facts_to_dict,
)
from envcheck.verify.facts.kernel_log import MAX_LOG_BYTES as KERNEL_LOG_MAX_BYTES
from envcheck.verify.facts.kernel_log import is_kmsg
from envcheck.verify.node.checks import run_node_checks
from envcheck.verify.node.prefix import collect_prefix_facts, interpreter, prefix_summary


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
        "3 UNKNOWN (docs/slurm.md)",
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


def run(args: argparse.Namespace) -> Report | int:
    if getattr(args, "nagios", False):
        return _run_nagios(args)
    return _run(args)


def _run_nagios(args: argparse.Namespace) -> int:
    """The report as one Nagios line; whatever stops the check is UNKNOWN (3), not 4."""
    import socket

    from envcheck.errors import EnvcheckError
    from envcheck.report import write_json, write_junit
    from envcheck.verify.node.nagios import nagios_line, unknown_line

    node = socket.gethostname().split(".")[0]
    try:
        report = _run(args)
        node = report.environment.get("host", node)
        if args.json:
            write_json(report, args.json)
        if args.junit:
            write_junit(report, args.junit)
        line, code = nagios_line(report, node)
    except EnvcheckError as e:
        line, code = unknown_line(node, e.message)
    except OSError as e:
        line, code = unknown_line(node, f"{e.strerror or e}: {e.filename or ''}")
    print(line)
    return code


def _run(args: argparse.Namespace) -> Report:
    exp = expectations_from_args(args)
    level = max(getattr(args, "level", 1), 2 if getattr(args, "load", False) else 1)
    if getattr(args, "load_seconds", 4.0) <= 0:
        raise BadInput(f"--load-seconds must be positive, not {args.load_seconds:g}")
    kernel_log = str(args.kernel_log) if getattr(args, "kernel_log", None) else ""
    if kernel_log and not is_kmsg(kernel_log):
        # a saved log: a regular file of bounded size (the collector bounds its read again)
        check_regular(kernel_log, "kernel log", KERNEL_LOG_MAX_BYTES)
    if args.facts and args.prefix:
        raise BadInput("give --facts or --prefix, not both")
    if args.prefix:
        facts = collect_prefix_facts(
            args.prefix, exp.import_modules, exp.libraries, exp.probe_timeout
        )
        check_lock_platform(exp, facts.platform)
    elif args.facts:
        facts = _load_facts(args.facts)
        check_lock_platform(exp, facts.platform)
    else:
        check_lock_platform(exp, conda_platform())  # before probing anything
        facts = _collect(exp, kernel_log)
    level_results: list[Result] = []
    measurements: list[Measurement] = []
    if facts.collect_seconds:
        measurements.append(
            Measurement("collect_node_facts", facts.collect_seconds, "s", node=facts.host)
        )
    if level >= 2 and not args.facts:
        from envcheck.verify.node.load import run_load

        # the load runs in the environment being checked: --prefix's interpreter, else ours
        python = str(interpreter(args.prefix)) if args.prefix else sys.executable
        facts, level_results, load_measurements = run_load(facts, args.load_seconds, python)
        measurements += load_measurements
    elif level >= 2:
        level_results.append(Result("gpu-load", Status.SKIP, "level 2 load skipped: judging "
                                    "saved --facts, not this machine"))
    if level >= 3:
        level_results.append(
            Result(
                "level-3",
                Status.SKIP,
                "level 3 is the cluster's bandwidth measurements (TCP vs UCX transfers, NCCL "
                "all-reduce busbw against topology references): run `envcheck verify cluster "
                "--bench` on the nodes",
                fix="envcheck verify cluster --bench (docs/verify-cluster.md)",
            )
        )
    if args.save_facts:
        try:
            args.save_facts.write_text(json.dumps(facts_to_dict(facts), indent=2) + "\n")
        except OSError as e:  # a write error carries no file name of its own: name it
            raise BadInput(f"--save-facts {args.save_facts}: {e.strerror or e}") from None
    results = run_node_checks(facts, exp, node=facts.host, plugins=not args.no_plugins)
    results += [dataclasses.replace(r, node=facts.host, group="node") for r in level_results]
    return Report(
        title="verify node",
        results=tuple(results),
        measurements=tuple(measurements),
        environment={
            **environment_summary(facts),
            **(prefix_summary(args.prefix, facts) if args.prefix else {}),
            "level": str(level),
        },
    )


def check_lock_platform(exp: Expectations, platform: str) -> None:
    """A --lock without packages for this machine's platform is bad input, not 12 failures."""
    if not exp.lock_packages:
        return
    have = sorted({p.platform for p in exp.lock_packages})
    if platform not in have:
        raise BadInput(
            f"the lock {exp.lock_path} has no {platform} packages (it has {', '.join(have)}): "
            f"add {platform} to the recipe's platforms and rebuild it"
        )


FACTS_MAX_BYTES = 64 << 20  # a node with 10,000 packages saves about 2 MiB
FACTS_FIFO_TIMEOUT = 30.0  # --facts <(ssh node ...): the writer's time to collect


def _collect(exp: Expectations, kernel_log: str = "") -> NodeFacts:
    return collect_node_facts(
        import_modules=exp.import_modules,
        libraries=exp.libraries,
        probe_timeout=exp.probe_timeout,
        kernel_log=kernel_log,
    )


def _load_facts(path: Path) -> NodeFacts:
    # a FIFO is allowed (--facts <(ssh node envcheck verify node --save-facts /dev/stdout))
    data = load_json_file(path, "facts file", FACTS_MAX_BYTES, fifo_timeout=FACTS_FIFO_TIMEOUT)
    try:
        return facts_from_dict(data)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise BadInput(f"{path}: not a facts file written by --save-facts ({e})") from None


def environment_summary(facts: NodeFacts) -> dict[str, str]:
    """The few facts a reader of the report wants first."""
    gpus = f"{len(facts.gpus)} x {facts.gpus[0].name}" if facts.gpus else "none"
    return {
        "host": facts.host,
        "user": facts.user,
        "python": f"{facts.python} ({facts.python_executable})",
        "platform": facts.platform,
        "glibc": facts.glibc or "n/a",
        "packages": f"{len(facts.packages)} ({facts.package_source})",
        "driver": facts.driver_version or f"none ({facts.nvml_error})",
        "cuda_driver": facts.cuda_driver_version or "n/a",
        "gpus": gpus,
        "cuda_visible_devices": facts.env.get("CUDA_VISIBLE_DEVICES", "(unset)"),
        "ucx": f"{facts.ucx.module} {facts.ucx.ucx_version}".strip() or "none",
        "nccl": facts.nccl_version or "none",
    }
