"""`envcheck verify node`: collect this machine's facts, judge them, report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.report import Measurement, Report
from envcheck.verify.checks import run_node_checks
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
from envcheck.verify.prefix import collect_prefix_facts, prefix_summary


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


def run(args: argparse.Namespace) -> Report:
    exp = expectations_from_args(args)
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
        facts = _collect(exp)
    if args.save_facts:
        try:
            args.save_facts.write_text(json.dumps(facts_to_dict(facts), indent=2) + "\n")
        except OSError as e:  # a write error carries no file name of its own: name it
            raise BadInput(f"--save-facts {args.save_facts}: {e.strerror or e}") from None
    results = run_node_checks(facts, exp, node=facts.host, plugins=not args.no_plugins)
    return Report(
        title="verify node",
        results=tuple(results),
        measurements=(
            (Measurement("collect_node_facts", facts.collect_seconds, "s", node=facts.host),)
            if facts.collect_seconds
            else ()
        ),
        environment={
            **environment_summary(facts),
            **(prefix_summary(args.prefix, facts) if args.prefix else {}),
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


def _collect(exp: Expectations) -> NodeFacts:
    return collect_node_facts(
        import_modules=exp.import_modules,
        libraries=exp.libraries,
        probe_timeout=exp.probe_timeout,
    )


def _load_facts(path: Path) -> NodeFacts:
    try:
        return facts_from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise BadInput(f"facts file not found: {path}") from None
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
