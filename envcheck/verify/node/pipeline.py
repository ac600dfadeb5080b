"""`verify node` from options to Report: collect (or load) the facts, judge them, report."""

from __future__ import annotations

import sys
from pathlib import Path

from envcheck.destinations import check_destination
from envcheck.errors import BadInput
from envcheck.inputs import check_regular, load_json_file
from envcheck.record import replace
from envcheck.report import Measurement, Report, Result, Status
from envcheck.verify.expect_options import expectations_from_options
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import (
    NodeFacts,
    collect_node_facts,
    conda_platform,
    facts_from_dict,
    facts_to_dict,
)
from envcheck.verify.facts.kernel_log import MAX_LOG_BYTES as KERNEL_LOG_MAX_BYTES
from envcheck.verify.facts.kernel_log import is_kmsg_device
from envcheck.verify.node.checks import run_node_checks
from envcheck.verify.node.options import NodeOptions


def verify_node(options: NodeOptions) -> Report:
    """Facts of this machine (or of --prefix's env, or saved --facts), judged -> one Report."""
    exp = expectations_from_options(options.expect)
    kernel_log = str(options.kernel_log) if options.kernel_log else ""
    if options.save_facts:
        check_destination(options.save_facts, f"--save-facts {options.save_facts}")
    if kernel_log:
        # /dev/kmsg, or a saved log: a regular file of bounded size outside /proc, /sys and
        # /dev (the collector bounds its read again)
        check_regular(kernel_log, "kernel log", KERNEL_LOG_MAX_BYTES, device=is_kmsg_device)
    facts = _facts(options, exp, kernel_log)
    measurements: list[Measurement] = []
    if facts.collect_seconds:
        measurements.append(
            Measurement("collect_node_facts", facts.collect_seconds, "s", node=facts.host)
        )
    facts, level_results, load_measurements = _levels(options, facts)
    measurements += load_measurements
    if options.save_facts:
        _save(options.save_facts, facts)
    results = run_node_checks(
        facts, exp, node=facts.host, plugins=options.plugins, skip=exp.skip
    )
    results += [replace(r, node=facts.host, group="node") for r in level_results]
    return Report(
        title="envcheck verify node",
        results=tuple(results),
        measurements=tuple(measurements),
        environment={
            **environment_summary(facts),
            **(_prefix_summary(options, facts) if options.prefix else {}),
            "level": str(options.level),
        },
    )


def _prefix_summary(options: NodeOptions, facts: NodeFacts) -> dict[str, str]:
    from envcheck.verify.node.prefix import prefix_summary  # --prefix only

    return prefix_summary(options.prefix, facts)


def _facts(options: NodeOptions, exp: Expectations, kernel_log: str) -> NodeFacts:
    if options.prefix:
        from envcheck.verify.node.prefix import collect_prefix_facts

        facts = collect_prefix_facts(
            options.prefix, exp.import_modules, exp.libraries, exp.probe_timeout,
            tensorflow=tensorflow_probe(exp),
        )
        check_lock_platform(exp, facts.platform)
        return facts
    if options.facts:
        facts = _load_facts(options.facts)
        check_lock_platform(exp, facts.platform)
        return facts
    check_lock_platform(exp, conda_platform())  # before probing anything
    return collect_node_facts(
        import_modules=exp.import_modules,
        libraries=exp.libraries,
        probe_timeout=exp.probe_timeout,
        kernel_log=kernel_log,
        tensorflow_probe=tensorflow_probe(exp),
    )


def tensorflow_probe(exp: Expectations) -> bool | None:
    """False where --skip tensorflow: its child costs TensorFlow's import; else None (the
    collector probes where TensorFlow is installed)."""
    return False if "tensorflow" in exp.skip else None


def _levels(
    options: NodeOptions, facts: NodeFacts
) -> tuple[NodeFacts, list[Result], list[Measurement]]:
    """Level 2's GPU load (facts under load, its results, its numbers); level 3's pointer."""
    results: list[Result] = []
    measurements: list[Measurement] = []
    if options.level >= 2 and not options.facts:
        from envcheck.verify.node.load import run_load

        # the load runs in the environment being checked: --prefix's interpreter, else ours
        python = sys.executable
        if options.prefix:
            from envcheck.verify.node.prefix import interpreter

            python = str(interpreter(options.prefix))
        facts, results, measurements = run_load(facts, options.load_seconds, python)
    elif options.level >= 2:
        results.append(Result("gpu-load", Status.WARN, "level 2 load not run: judging "
                              "saved --facts, not this machine",
                              fix="run --level 2 on the machine itself, or use --level 1 "
                              "with --facts"))
    if options.level >= 3:
        results.append(
            Result(
                "level-3",
                Status.WARN,
                "level 3 not run here: it is the cluster's bandwidth measurements (TCP vs UCX "
                "transfers, NCCL all-reduce busbw against topology references): run "
                "`envcheck verify cluster --bench` on the nodes",
                fix="envcheck verify cluster --bench (envcheck docs verify-cluster)",
            )
        )
    return facts, results, measurements


def _save(path: Path, facts: NodeFacts) -> None:
    import json

    from envcheck.destinations import write_file

    write_file(path, (json.dumps(facts_to_dict(facts), indent=2) + "\n").encode(),
               f"--save-facts {path}")


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
