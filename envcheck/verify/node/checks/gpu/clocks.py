"""Clock event (throttle) reasons: a GPU held back by heat, power brake or a hardware signal."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

from .health_common import gpu_health_or_skip, gpu_name, read_errors, unsupported_note

CHECK = "clocks"

# nvmlClocksEventReason* bits (nvml.h); the ones that mean the hardware is in trouble fail.
REASONS: dict[int, tuple[str, bool]] = {
    0x1: ("idle", False),
    0x2: ("applications clocks setting", False),
    0x4: ("software power cap", False),
    0x8: ("hardware slowdown", True),
    0x10: ("sync boost", False),
    0x20: ("software thermal slowdown", True),
    0x40: ("hardware thermal slowdown", True),
    0x80: ("hardware power brake slowdown", True),
    0x100: ("display clock setting", False),
}


def reason_names(mask: int) -> list[str]:
    names = [name for bit, (name, _) in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return names + ([f"0x{rest:x}"] if rest else [])


def check_clocks(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """No clocks-event reason active other than idle/app settings/power cap/sync boost."""
    healths, skip = gpu_health_or_skip(facts, CHECK)
    if skip:
        return skip
    bad: list[str] = []
    info: list[str] = []
    for h in healths:
        mask = h.clocks_event_reasons
        if mask is None:
            continue
        if any(mask & bit for bit, (_, hw) in REASONS.items() if hw):
            bad.append(f"{gpu_name(h)}: {', '.join(reason_names(mask))}")
        elif mask & ~0x1:
            info.append(f"GPU {h.index}: {', '.join(reason_names(mask))}")
    out = read_errors(healths, ("clocks_event_reasons",), CHECK)
    if bad:
        out.append(
            Result(
                CHECK,
                Status.FAIL,
                "clocks held back by the hardware: " + "; ".join(bad),
                fix="thermal: check fans, airflow and inlet temperature (nvidia-smi -q -d "
                "TEMPERATURE,PERFORMANCE); power brake / hardware slowdown: check the PSUs and the "
                "BMC's event log; the GPU runs far below its speed until this clears",
            )
        )
        return out
    note = unsupported_note(healths, ("clocks_event_reasons",))
    read = sum(h.clocks_event_reasons is not None for h in healths)
    msg = f"{read} GPUs: no thermal, power-brake or hardware slowdown"
    if info:
        msg += " (active: " + "; ".join(info) + ")"
    out.append(Result(CHECK, Status.PASS, msg + note))
    return out
