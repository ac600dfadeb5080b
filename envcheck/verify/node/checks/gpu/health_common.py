"""What the health checks share: which GPU health facts to judge, and how to name a GPU."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.facts import GpuHealth, NodeFacts

from .nvml_gap import gap_results, no_gpu_skip


def gpu_health_or_skip(facts: NodeFacts, check: str) -> tuple[list[GpuHealth], list[Result]]:
    """(the GPU health facts collected, []) or ([], [a skip saying why there are none]).

    verify node collects every GPU NVML sees (health is the node's, whatever
    CUDA_VISIBLE_DEVICES leaves this process); a cluster worker the GPUs it is given.
    """
    if not facts.gpus:
        return [], gap_results(facts, check, f"GPU health ({check})") or [no_gpu_skip(facts,
                                                                                     check)]
    if not facts.gpu_health:
        if facts.host_health.collected and facts.role == "worker":
            why = "CUDA_VISIBLE_DEVICES leaves this worker no GPU"
        else:
            why = "collected without them, or by an envcheck older than these checks"
        return [], [Result(check, Status.SKIP, f"no GPU health facts ({why})")]
    return list(facts.gpu_health), []


def gpu_name(h: GpuHealth) -> str:
    return f"GPU {h.index}" + (f" ({h.pci_bus_id})" if h.pci_bus_id else "")


def unsupported_note(healths: list[GpuHealth], fields: tuple[str, ...]) -> str:
    """' (unsupported on GPU 0, 1: ecc_enabled)' or ''."""
    hit = [h for h in healths if any(f in h.unsupported for f in fields)]
    if not hit:
        return ""
    which = sorted({f for h in hit for f in h.unsupported if f in fields})
    return f" (NVML: unsupported on GPU {', '.join(str(h.index) for h in hit)}: {', '.join(which)})"


def read_errors(healths: list[GpuHealth], fields: tuple[str, ...], check: str) -> list[Result]:
    """An error result per GPU whose NVML read of one of `fields` failed (not NotSupported)."""
    out = []
    for h in healths:
        bad = [e for e in h.errors if e.split(":", 1)[0].split()[0] in fields]
        if bad:
            out.append(
                Result(
                    check,
                    Status.ERROR,
                    f"{gpu_name(h)}: NVML read failed: {'; '.join(bad)}",
                    fix=f"run nvidia-smi -q -i {h.index} to see whether the driver answers; a "
                    "GPU that does not answer NVML needs a reset or a reboot",
                )
            )
    return out
