"""gemm: verify node --level 2's matrix multiplies, right and as fast as the datasheet says.

A product that differs from float64 beyond its type's tolerance fails (the GPU computes wrong
results); throughput under FAIL_FRACTION of the model's dense datasheet peak fails, under
WARN_FRACTION warns, naming the GPU with its lowest SM clock, highest temperature and the
clocks event reasons NVML gave during the multiplies (envcheck/verify/node/datasheet.py).
"""

from __future__ import annotations

import math

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import GemmRun, NodeFacts
from envcheck.verify.node.datasheet import FAIL_FRACTION, WARN_FRACTION, peak_for

from .clocks import reason_names
from .held import held_result
from .nvml_gap import no_gpu_skip

CHECK = "gemm"


def _who(run: GemmRun) -> str:
    return f"GPU {run.index}" + (f" ({run.name})" if run.name else "")


def _conditions(run: GemmRun) -> str:
    parts = []
    if run.sm_clock_min_mhz is not None:
        parts.append(f"SM clock down to {run.sm_clock_min_mhz} MHz")
    if run.temperature_max_c is not None:
        parts.append(f"up to {run.temperature_max_c} C")
    reasons = [r for r in reason_names(run.clocks_event_reasons) if r != "idle"]
    if reasons:
        parts.append("clocks held by " + ", ".join(reasons))
    return f" ({'; '.join(parts)})" if parts else ""


def judge_gemm(run: GemmRun) -> Result:
    """One multiply on one GPU: ran, right, fast enough."""
    who, what = _who(run), f"{run.dtype}{' (TF32)' if run.tf32 else ''} {run.n}x{run.n}"
    if run.error:
        return Result(CHECK, Status.FAIL, f"{who}: {run.dtype or 'matrix'} multiply failed: "
                      f"{run.error}", fix="run with --debug; nvidia-smi -q -i "
                      f"{run.index} and dcgmi diag -r 2 on that GPU")
    if not (run.max_rel_error >= 0 and run.max_rel_error <= run.tolerance):
        err = "NaN/inf" if math.isinf(run.max_rel_error) else f"{run.max_rel_error:.2e}"
        return Result(CHECK, Status.FAIL, f"{who}: {what} product differs from float64 by "
                      f"{err} of its largest element (tolerance {run.tolerance:g})",
                      fix="drain the node: the GPU computes wrong results; reset it and run "
                      "dcgmi diag -r 3")
    peak = peak_for(run.name)
    rate = f"{run.tflops:.1f} TFLOPS"
    right = f"within {run.max_rel_error:.1e} of float64"
    if peak is None or run.tf32:
        why = "TF32 forced by the environment" if run.tf32 else "model not in the datasheet table"
        return Result(CHECK, Status.PASS, f"{who}: {what} {rate}, {right} (throughput not "
                      f"judged: {why})")
    ref = peak.fp32 if run.dtype == "float32" else peak.half
    if ref is None:
        return Result(CHECK, Status.PASS, f"{who}: {what} {rate}, {right} (no tensor-core peak "
                      f"for {run.dtype} on {peak.model})")
    frac = run.tflops / ref
    msg = f"{who}: {what} {rate} = {frac:.0%} of {peak.model}'s dense peak {ref:g} ({right})"
    if frac >= WARN_FRACTION:
        return Result(CHECK, Status.PASS, msg)
    status = Status.FAIL if frac < FAIL_FRACTION else Status.WARN
    limit = FAIL_FRACTION if status is Status.FAIL else WARN_FRACTION
    return Result(CHECK, status, f"{msg}: below {limit:.0%}{_conditions(run)}",
                  fix=f"nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE -i {run.index}: "
                  "look for power or thermal slowdown, application clocks set low (nvidia-smi "
                  "-rac), another process on the GPU; then dcgmi diag -r 3")


def check_gemm(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Every matrix multiply of the level 2 load; a skip when none ran.

    One that ran out of memory on a GPU another process held is an ERROR (held.py), not the
    GPU's failure."""
    if not facts.gemm and not facts.gpus:
        return [no_gpu_skip(facts, CHECK)]
    if not facts.gemm:
        return [Result(CHECK, Status.SKIP, "no matrix multiply ran (verify node --level 2 runs "
                       "them on every visible GPU)")]
    results = []
    for run in facts.gemm:
        held = held_result(CHECK, facts, run.index, "the multiplies") if run.out_of_memory else None
        results.append(held or judge_gemm(run))
    return results
