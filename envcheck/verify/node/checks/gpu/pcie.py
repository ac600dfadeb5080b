"""PCIe link of each GPU: trained at the generation and width the GPU and its slot support."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import GpuHealth, NodeFacts

from .health_common import gpu_health_or_skip, gpu_name, read_errors
from .thresholds import DCGM_HEALTH, pcie_replays_allowed_per_min

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
    out.extend(_replays(healths, loaded))
    return out


def _replays(healths: list[GpuHealth], loaded: dict[int, GpuHealth]) -> list[Result]:
    """Replays grown over the load window faster than DCGM's expected rate -> warn; a count
    since the driver loaded, undated, is said in a pass line (DCGM judges only the rate)."""
    fast: list[str] = []
    counted: list[str] = []
    for h in healths:
        under = loaded.get(h.index)
        if under is None or h.pcie_replays is None or under.pcie_replays is None:
            if h.pcie_replays:
                counted.append(f"{gpu_name(h)} {h.pcie_replays}")
            continue
        window = under.read_at - h.read_at if h.read_at and under.read_at else 0.0
        grew = under.pcie_replays - h.pcie_replays
        gen = under.pcie_gen or h.pcie_gen_max or 1
        width = under.pcie_width or h.pcie_width_max or 16
        allowed = pcie_replays_allowed_per_min(gen, width)
        if grew > 0 and window > 0 and grew * 60.0 / window > allowed:
            fast.append(f"{gpu_name(h)} +{grew} in {window:.1f} s ({grew * 60.0 / window:.0f}/min "
                        f"against {allowed}/min for gen{gen} x{width})")
        elif under.pcie_replays:
            counted.append(f"{gpu_name(h)} {under.pcie_replays}"
                           + (f" (+{grew} under load)" if grew > 0 else ""))
    out = []
    if fast:
        out.append(Result(
            CHECK, Status.WARN,
            "PCIe replays (link-level retransmissions) faster than DCGM's expected rate (a bit "
            f"error rate of 1e-12 per lane, {DCGM_HEALTH} MonitorPcie): " + "; ".join(fast),
            fix="a marginal link: reseat the GPU/riser, check cabling and the slot; watch "
            "nvidia-smi -q -d PCIE (Replays) under a job"))
    if counted:
        out.append(Result(
            CHECK, Status.PASS,
            "PCIe replays since the driver loaded (not dated; DCGM judges only their rate, "
            "--level 2 measures it): " + ", ".join(counted)))
    return out


def _link(h: GpuHealth) -> str:
    return f"gen{h.pcie_gen} x{h.pcie_width} (max gen{h.pcie_gen_max} x{h.pcie_width_max})"
