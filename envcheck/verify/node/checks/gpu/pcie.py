"""PCIe link of each GPU: trained at the generation and width the GPU and its slot support."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import GpuHealth, NodeFacts

from .health_common import gpu_health_or_skip, gpu_name, read_errors

CHECK = "pcie"
_FIELDS = ("pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max", "pcie_replays")


def check_pcie(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Link gen/width at the maximum: below it idle -> warn, below it under load -> fail."""
    healths, skip = gpu_health_or_skip(facts, CHECK)
    if skip:
        return skip
    loaded = {h.index: h for h in facts.gpu_health_after}
    low_idle: list[str] = []
    low_loaded: list[str] = []
    unknown: list[str] = []
    links: list[str] = []
    for h in healths:
        under = loaded.get(h.index)
        if h.pcie_gen_max is None or h.pcie_width_max is None or h.pcie_gen is None \
                or h.pcie_width is None:
            unknown.append(str(h.index))
            continue
        cur = under if under is not None and under.pcie_gen is not None else h
        text = _link(cur)
        links.append(f"GPU {h.index} {text}")
        if (cur.pcie_gen or 0) < h.pcie_gen_max or (cur.pcie_width or 0) < h.pcie_width_max:
            (low_loaded if cur is under else low_idle).append(f"{gpu_name(h)} {text}")
    out = read_errors(healths, _FIELDS, CHECK)
    if low_loaded:
        out.append(
            Result(
                CHECK,
                Status.FAIL,
                "PCIe link below its maximum under load: " + "; ".join(low_loaded),
                fix="reseat the GPU or riser, check the slot's BIOS setting (PCIe gen, "
                "bifurcation) and cabling; a x8 or gen1 link halves or worse host<->GPU bandwidth",
            )
        )
    if low_idle:
        out.append(
            Result(
                CHECK,
                Status.WARN,
                "PCIe link below its maximum with no load: " + "; ".join(low_idle)
                + ". Idle GPUs may downshift the generation to save power; "
                "--level 2 measures the link under load",
                fix="run envcheck verify node --level 2 (or watch nvidia-smi -q -d PCIE during a "
                "job); still low under load: reseat the GPU, check the slot's BIOS settings",
            )
        )
    if not low_loaded and not low_idle:
        how = "under load" if loaded else "idle"
        msg = f"{len(links)} GPUs at their maximum link ({how}): " + ", ".join(links)
        if unknown:
            msg += f"; GPU {', '.join(unknown)}: link not reported by NVML"
        out.append(Result(CHECK, Status.PASS, msg))
    replays = [h for h in healths if h.pcie_replays]
    if replays:
        out.append(
            Result(
                CHECK,
                Status.WARN,
                "PCIe replays (link-level retransmissions): "
                + ", ".join(f"{gpu_name(h)} {h.pcie_replays}" for h in replays),
                fix="a growing replay count means a marginal link: reseat the GPU/riser, check "
                "cabling and the slot; compare after a load with --level 2",
            )
        )
    return out


def _link(h: GpuHealth) -> str:
    return f"gen{h.pcie_gen} x{h.pcie_width} (max gen{h.pcie_gen_max} x{h.pcie_width_max})"
