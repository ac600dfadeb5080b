"""A level 2 load that ran out of memory on a GPU other processes held: not a broken GPU.

Decided from the facts read before the load (NVML's processes on the GPU and its memory in
use) and the load's own out-of-memory error: where another process held memory there, the
load could not start, an ERROR (exit 3) naming who held it and the memory that was left; an
out-of-memory error on a GPU nobody else held stays the load's or the gemm check's FAIL.
"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.facts import NodeFacts

from .busy import UNSEEN_USE_MIB

_COMMAND = 80


def memory_held(facts: NodeFacts, index: int) -> str:
    """Who held NVML GPU `index`'s memory before the load and how much was left, or '' where
    no other process held any there."""
    gpu = next((g for g in facts.gpus if g.index == index), None)
    if gpu is None:
        return ""
    ours = {facts.pid, *facts.own_pids}
    others = [p for p in gpu.processes if p.pid not in ours]
    left = f"{gpu.memory_total_mib - gpu.memory_used_mib} MiB of {gpu.memory_total_mib} MiB " \
        "left"
    if others:
        held = []
        for p in others:
            command = f" ({p.command[:_COMMAND]})" if p.command else ""
            held.append(f"pid {p.pid}{command}, user {p.user or 'unknown'}, {p.used_mib} MiB")
        return "; ".join(held) + f"; {left}"
    unlisted = gpu.memory_used_mib - sum(p.used_mib for p in gpu.processes)
    if not gpu.processes and unlisted > UNSEEN_USE_MIB:
        return f"{unlisted} MiB used by no listed process (another container?); {left}"
    return ""


def held_result(check: str, facts: NodeFacts, index: int, what: str) -> Result | None:
    """The ERROR for an out-of-memory error of `what` ("the load", "the multiplies") on GPU
    `index` where other processes held its memory before the load; None where none did (the
    GPU's own failure)."""
    held = memory_held(facts, index)
    if not held:
        return None
    return Result(check, Status.ERROR, f"GPU {index}: {what} could not run: out of memory, "
                  f"with its memory held by another process before the load: {held}",
                  fix=f"free GPU {index} (end or wait for the process named), or leave it out "
                  "with CUDA_VISIBLE_DEVICES")
