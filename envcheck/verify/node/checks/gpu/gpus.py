"""The GPUs a job will see: how many, which model, how much memory, which architecture."""

from __future__ import annotations

from collections import Counter

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations, version_tuple
from envcheck.verify.facts import Gpu, NodeFacts, resolve_visible_devices

from .nvml_gap import gap_results, no_gpu_skip, no_nvml_fix, nvml_gap

# Oldest compute capability each CUDA major release still builds for. CUDA 12.0 dropped
# Kepler (sm_35/37); CUDA 13.0 dropped Maxwell, Pascal and Volta (sm_50 to sm_70).
# Source: CUDA Toolkit Release Notes 12.0 and 13.0, "Deprecated or Dropped Architectures".
MIN_CC_FOR_CUDA: dict[int, tuple[int, int]] = {11: (3, 5), 12: (5, 0), 13: (7, 5)}


def visible_gpus(facts: NodeFacts) -> list[Gpu]:
    """The GPUs CUDA exposes to this process, in CUDA order."""
    uuids, _ = resolve_visible_devices(facts.env.get("CUDA_VISIBLE_DEVICES"), facts.gpus)
    by_uuid = {g.uuid: g for g in facts.gpus}
    return [by_uuid[u] for u in uuids if u in by_uuid]


def _describe(gpus: list[Gpu]) -> str:
    kinds = Counter((g.name, g.memory_total_mib) for g in gpus)
    return ", ".join(f"{n}x {name} ({mib} MiB)" for (name, mib), n in kinds.items())


def check_gpus(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """GPU count, model and memory as expected (--expect-gpus, --expect-gpu-model, ...)."""
    check = "gpus"
    gap = nvml_gap(facts)
    if gap is not None:
        return [_gpus_without_nvml(facts, exp, gap[1])]
    if facts.nvml_error and not facts.gpus:
        if exp.expects_gpus:
            want = f"{exp.expect_gpus} GPU(s)" if exp.expect_gpus else "GPUs"
            return [
                Result(
                    check,
                    Status.FAIL,
                    f"expected {want} but NVML sees none: {facts.nvml_error}",
                    fix=no_nvml_fix(facts),
                )
            ]
        return [no_gpu_skip(facts, check)]
    seen = visible_gpus(facts)
    # MIG instances named in CUDA_VISIBLE_DEVICES are devices too, though NVML facts list only
    # their parent GPUs: count them, do not inspect them
    mig = [
        u
        for u in resolve_visible_devices(facts.env.get("CUDA_VISIBLE_DEVICES"), facts.gpus)[0]
        if u.startswith("MIG-")
    ]
    hidden = len(facts.gpus) - len(seen) if not mig else 0
    where = f"{len(seen)} of {len(facts.gpus)} GPUs visible" if hidden else f"{len(seen)} GPUs"
    if mig:
        where += f" + {len(mig)} MIG instance(s), not inspected"
    problems: list[str] = []
    if exp.expect_gpus is not None and len(seen) + len(mig) != exp.expect_gpus:
        why = f" (CUDA_VISIBLE_DEVICES hides {hidden} of {len(facts.gpus)})" if hidden else ""
        problems.append(f"expected {exp.expect_gpus} GPUs, a job sees {len(seen) + len(mig)}{why}")
    if exp.expect_gpu_model:
        wrong = [g for g in seen if exp.expect_gpu_model.lower() not in g.name.lower()]
        if wrong:
            problems.append(
                f"expected model {exp.expect_gpu_model!r}, found "
                + ", ".join(f"GPU {g.index} {g.name}" for g in wrong)
            )
    if exp.min_memory_mib:
        problems += _memory_problems(seen, facts, exp)
    if problems:
        return [
            Result(
                check,
                Status.FAIL,
                "; ".join(problems) + f" [{where}: {_describe(seen) or 'none'}]",
                fix="run on the intended node type, or fix CUDA_VISIBLE_DEVICES / the "
                "scheduler's GPU request (e.g. --gres=gpu:N)",
            )
        ]
    if not seen and not mig and exp.expect_gpus is None:
        # NVML sees GPUs, CUDA will give the job none (CUDA_VISIBLE_DEVICES empty, -1, a
        # duplicate, a bad first entry): rarely what someone who asked nothing meant
        value = facts.env.get("CUDA_VISIBLE_DEVICES")
        return [
            Result(
                check,
                Status.WARN,
                f"NVML sees {len(facts.gpus)} GPUs but a job here sees none "
                f"(CUDA_VISIBLE_DEVICES={value!r})",
                fix="unset CUDA_VISIBLE_DEVICES or list each GPU once (e.g. 0,1); if no GPU is "
                "meant for this job, say so with --expect-gpus 0",
            )
        ]
    if exp.expect_gpus == 0:
        where += " (none expected)"
    return [Result(check, Status.PASS, f"{where}: {_describe(seen) or 'none'}")]


def _gpus_without_nvml(facts: NodeFacts, exp: Expectations, fix: str) -> Result:
    """The GPUs the kernel driver lists, against the expectations, when NVML gives none."""
    listed = facts.kernel_driver.gpus
    kinds = Counter(g.model or "unknown model" for g in listed)
    seen = ", ".join(f"{n}x {m}" for m, n in kinds.items()) or "none"
    problems = []
    if exp.expect_gpus is not None and len(listed) != exp.expect_gpus:
        problems.append(f"expected {exp.expect_gpus} GPUs, the driver lists {len(listed)}")
    if exp.expect_gpu_model:
        wrong = [g for g in listed if exp.expect_gpu_model.lower() not in g.model.lower()]
        if wrong:
            problems.append(f"expected model {exp.expect_gpu_model!r}, found "
                            + ", ".join(f"{g.pci_bus_id} {g.model}" for g in wrong))
    excluded = [g.pci_bus_id for g in listed if g.excluded]
    if excluded:
        problems.append("excluded by the driver: " + ", ".join(excluded))
    extra = ("; " + "; ".join(problems)) if problems else ""
    return Result(
        "gpus",
        Status.FAIL,
        f"{len(listed)} GPU(s) in /proc/driver/nvidia/gpus ({seen}) but NVML cannot read "
        f"them ({facts.nvml_error}): memory, processes and compute capability unknown{extra}",
        fix=fix,
    )


def check_compute_capability(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Every visible GPU is at least the architecture the CUDA build and --min-compute-... need."""
    check = "compute-capability"
    need: tuple[int, int] | None = exp.min_compute_capability
    reason = f"--min-compute-capability {need[0]}.{need[1]}" if need else ""
    cuda_major = version_tuple(exp.cuda)[:1]
    if cuda_major and cuda_major[0] in MIN_CC_FOR_CUDA:
        floor = MIN_CC_FOR_CUDA[cuda_major[0]]
        if need is None or floor > need:
            need, reason = floor, f"CUDA {exp.cuda} builds for sm_{floor[0]}{floor[1]} and newer"
    seen = visible_gpus(facts)
    if not seen:
        return gap_results(facts, check, "compute capability") or [
            no_gpu_skip(facts, check) if not facts.gpus
            else Result(check, Status.SKIP, "no visible GPU")
        ]
    if need is None:
        return [Result(check, Status.SKIP, "no minimum given (--min-compute-capability, --cuda)")]
    old = [g for g in seen if g.compute_capability < need]
    if old:
        return [
            Result(
                check,
                Status.FAIL,
                ", ".join(
                    f"GPU {g.index} {g.name} is sm_{g.compute_capability[0]}"
                    f"{g.compute_capability[1]}"
                    for g in old
                )
                + f": below {need[0]}.{need[1]} ({reason})",
                fix="use newer GPUs, or an environment built for an older CUDA",
            )
        ]
    ccs = sorted({f"{g.compute_capability[0]}.{g.compute_capability[1]}" for g in seen})
    return [
        Result(check, Status.PASS, f"compute capability {', '.join(ccs)} >= {need[0]}.{need[1]}")
    ]


def _memory_problems(seen: list[Gpu], facts: NodeFacts, exp: Expectations) -> list[str]:
    """GPUs smaller than --min-gpu-memory, and those where other processes leave less."""
    out = []
    small = [g for g in seen if g.memory_total_mib < exp.min_memory_mib]
    if small:
        out.append(f"expected >= {exp.min_memory_mib} MiB per GPU, found "
                   + ", ".join(f"GPU {g.index} {g.memory_total_mib} MiB" for g in small))
    held = [(g, _held_by_others(g, facts, exp)) for g in seen if g not in small]
    short = [(g, mib, pids) for g, (mib, pids) in held
             if pids and g.memory_total_mib - mib < exp.min_memory_mib]
    if short:
        out.append(f"expected >= {exp.min_memory_mib} MiB free per GPU, other processes hold "
                   + ", ".join(f"GPU {g.index} {mib} MiB (pid {', '.join(map(str, pids))}; "
                               f"{g.memory_total_mib - mib} MiB left)" for g, mib, pids in short))
    return out


def _held_by_others(g: Gpu, facts: NodeFacts, exp: Expectations) -> tuple[int, list[int]]:
    """(MiB that processes other than this one's tree and --known pids hold on GPU g, their
    pids): memory a job started here cannot have (the driver's own reserve is not counted)."""
    own = set(facts.own_pids) | set(exp.known_pids)
    others = [p for p in g.processes if p.pid not in own]
    return sum(p.used_mib for p in others), [p.pid for p in others]
