"""CUDA_VISIBLE_DEVICES: does it name GPUs that exist, each once, and leave the job some?"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts, resolve_visible_devices

from .nvml_gap import gap_results, no_gpu_skip

CHECK = "cuda-visible-devices"


def check_visible(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """CUDA_VISIBLE_DEVICES names existing GPUs, no duplicates, not empty when GPUs are expected."""
    value = facts.env.get("CUDA_VISIBLE_DEVICES")
    if not facts.gpus:
        gap = gap_results(facts, CHECK, f"CUDA_VISIBLE_DEVICES={value!r}" if value is not None
                          else "CUDA_VISIBLE_DEVICES (unset)")
        if gap:
            return gap
        if value is None:
            return [no_gpu_skip(facts, CHECK)]
        return [
            Result(
                CHECK,
                Status.SKIP,
                f"CUDA_VISIBLE_DEVICES={value!r} not checked: "
                f"{facts.nvml_error or 'NVML lists no GPU'}",
            )
        ]
    if value is None:
        return [Result(CHECK, Status.PASS, f"unset: all {len(facts.gpus)} GPUs visible")]
    uuids, problem = resolve_visible_devices(value, facts.gpus)
    index = {g.uuid: g.index for g in facts.gpus}
    shown = ", ".join(f"GPU {index[u]}" if u in index else u for u in uuids) or "no GPU"
    all_gpus = f"GPUs 0-{len(facts.gpus) - 1}"
    if problem:
        hides_all = not uuids
        deliberate = hides_all and value.strip() in ("", "-1", "NoDevFiles", "none")
        status = Status.WARN if deliberate and not exp.expects_gpus else Status.FAIL
        if deliberate and exp.expect_gpus == 0:  # --expect-gpus 0: hiding them is the point
            return [Result(CHECK, Status.PASS, f"CUDA_VISIBLE_DEVICES={value!r}: no GPU, "
                                               "as --expect-gpus 0 says")]
        return [
            Result(
                CHECK,
                status,
                f"CUDA_VISIBLE_DEVICES={value!r}: {problem}"
                + (f"; CUDA will expose {shown}" if uuids else ""),
                fix=f"list each GPU once, by index ({all_gpus}) or UUID "
                "(nvidia-smi -L), e.g. CUDA_VISIBLE_DEVICES=0,1; or unset it",
            )
        ]
    results = [Result(CHECK, Status.PASS, f"CUDA_VISIBLE_DEVICES={value!r} -> {shown}")]
    names = {g.name for g in facts.gpus}
    uses_index = any(t.strip().isdigit() for t in value.split(","))
    if uses_index and len(names) > 1 and facts.cuda_device_order != "PCI_BUS_ID":
        results.append(
            Result(
                CHECK,
                Status.WARN,
                "mixed GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers the "
                "fastest GPU 0, so indices may not match nvidia-smi",
                fix="export CUDA_DEVICE_ORDER=PCI_BUS_ID, or list GPUs by UUID",
            )
        )
    return results
