"""NVLink: every link a GPU has is up, and no link counts errors (or, worse, adds to them)."""

from __future__ import annotations

from collections import Counter

from envcheck.record import replace
from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import GpuHealth, NodeFacts

from .health_common import gpu_health_or_skip, gpu_name, read_errors
from .nvlink_counters import judge_counters

CHECK = "nvlink"


def check_nvlink(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Links down where same-model GPUs have them up -> fail; the error counters as DCGM's
    health watch judges them over --level 2's load window (nvlink_counters.py)."""
    healths, skip = gpu_health_or_skip(facts, CHECK)
    if skip:
        return skip
    with_links = [h for h in healths if h.nvlinks]
    if not with_links:
        return [Result(CHECK, Status.SKIP, f"no NVLink on the {len(healths)} GPUs (PCIe only)")]
    out = read_errors(healths, ("nvlink",), CHECK)
    missing, unused = _links_down(facts, with_links)
    if missing:
        out.append(
            Result(
                CHECK,
                Status.FAIL,
                "NVLink links down that other GPUs of the same model have up: "
                + "; ".join(missing),
                fix="reset the GPU (nvidia-smi -r) or reboot; on NVSwitch systems check "
                "nvidia-fabricmanager is running; if the link stays down, service the board",
            )
        )
    counters, notes = judge_counters(facts, with_links)
    out.extend(counters)
    note = f". {'; '.join(notes)}" if notes else ""
    if not missing and not counters:
        out.append(Result(CHECK, Status.PASS, _summary(with_links, unused) + note))
    elif note:
        out[-1] = replace(out[-1], message=out[-1].message + note)
    return out


def _links_down(facts: NodeFacts, with_links: list[GpuHealth]) -> tuple[list[str], set[int]]:
    """("GPU: link N down" for links a same-model GPU has up, links down on every such GPU).

    The topology says a link exists when a GPU of the same model has it up: NVML lists the
    links a GPU *could* have; a PCIe card with a bridge uses only some of them. Peers are
    every GPU NVML sees (Gpu.nvlinks_active), also those whose health was not read (a
    cluster worker reads only its own GPUs').
    """
    model = {g.index: g.name for g in facts.gpus}
    up_by_model: dict[str, Counter] = {}
    most_up: dict[str, int] = {}
    for g in facts.gpus:
        most_up[g.name] = max(most_up.get(g.name, 0), g.nvlinks_active)
    for h in with_links:
        up_by_model.setdefault(model.get(h.index, ""), Counter()).update(
            n.link for n in h.nvlinks if n.up
        )
    missing: list[str] = []
    unused: set[int] = set()
    for h in with_links:
        name = model.get(h.index, "")
        down = [n.link for n in h.nvlinks if not n.up]
        lost = [link for link in down if up_by_model[name][link] > 0]
        if not lost and sum(n.up for n in h.nvlinks) < most_up.get(name, 0):
            lost = down  # fewer links up than another GPU of its model has: any may be it
        unused.update(link for link in down if link not in lost)
        if lost:
            missing.append(f"{gpu_name(h)}: link {', '.join(map(str, lost))} down")
    return missing, unused


def _summary(with_links: list[GpuHealth], unused: set[int]) -> str:
    up = Counter(sum(n.up for n in h.nvlinks) for h in with_links)
    summary = ", ".join(f"{n} GPUs with {k} links up" for k, n in sorted(up.items()))
    if unused:
        summary += f"; link {', '.join(map(str, sorted(unused)))} down on every GPU " \
                   "of its model (not wired)"
    if any("nvlink_error_counters" in h.unsupported for h in with_links):
        summary += "; error counters unsupported by NVML on this GPU/driver"
    return summary



