"""Xid events in the kernel log: what the NVIDIA driver said went wrong since boot."""

from __future__ import annotations

from collections import Counter

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts, XidEvent

from .nvml_gap import no_gpu_skip

CHECK = "xid"

# code -> (what it means, fail (True) or warn, what to do). From NVIDIA's "Xid Errors"
# catalog (docs.nvidia.com/deploy/xid-errors) and its GPU debug guidelines.
_APP = "usually the application (bad address, killed kernel): fix or rerun it; if it repeats " \
       "across applications, run dcgmi diag -r 3 on this GPU"
_RESET = "drain the node, reset the GPU (nvidia-smi -r -i N) or reboot, then run this check again"
XID_CODES: dict[int, tuple[str, bool, str]] = {
    13: ("graphics engine exception", False, _APP),
    31: ("GPU memory page fault (MMU fault)", False, _APP),
    43: ("GPU stopped processing (a channel was reset)", False, _APP),
    45: ("preemptive cleanup after an earlier error or a killed process", False,
         "follows another Xid or a killed job: look at the Xid before it"),
    48: ("double-bit (uncorrectable) ECC error", True,
         _RESET + "; if it repeats, the GPU needs service (RMA)"),
    61: ("internal micro-controller breakpoint/warning", True, _RESET),
    62: ("internal micro-controller halt", True, _RESET),
    63: ("ECC page retirement or row remap recorded", False,
         "reset the GPU when idle so the retirement/remap takes effect (see the ecc check)"),
    64: ("ECC page retirement or row remap failed", True,
         "drain the node; the GPU needs service (RMA)"),
    74: ("NVLink error", True,
         _RESET + "; check the NVLink/NVSwitch fabric (nvidia-smi nvlink -s, fabric manager)"),
    79: ("GPU has fallen off the bus", True,
         "drain the node; check PCIe seating, power and cooling; reboot; if it repeats, RMA"),
    92: ("high single-bit ECC error rate", False, "watch the ECC counts; service if they grow"),
    94: ("contained ECC error (the affected application was stopped)", False,
         "reset the GPU when idle so the bad memory is remapped"),
    95: ("uncontained ECC error (every application on the GPU was affected)", True, _RESET),
    109: ("context switch timeout", False, _APP),
    119: ("GSP RPC timeout (GPU System Processor did not answer)", True,
          _RESET + "; if it repeats, upgrade the driver"),
    120: ("GSP error", True, _RESET + "; if it repeats, upgrade the driver"),
    140: ("unrecovered ECC error", True, _RESET),
    154: ("GPU recovery action changed (the driver asks for a reset or reboot)", True,
          "do what the line asks: reset the GPU or reboot the node"),
}


def check_xid(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """No Xid error in the kernel log since boot (or since --since); each code explained."""
    hh = facts.host_health
    if not hh.collected:
        return [Result(CHECK, Status.SKIP, "no host health facts (older collector)")]
    if hh.kernel_log_error and not hh.xid_events and not facts.gpus:
        return [no_gpu_skip(facts, CHECK)]
    if hh.kernel_log_error and not hh.xid_events:
        return [Result(CHECK, Status.SKIP, f"kernel log not read: {hh.kernel_log_error}")]
    events = list(hh.xid_events)
    window = "since boot"
    if exp.xid_since_seconds is not None and hh.uptime_seconds >= 0:
        start = hh.uptime_seconds - exp.xid_since_seconds
        events = [e for e in events if e.seconds < 0 or e.seconds >= start]
        window = f"in the last {exp.xid_since_seconds:g} s"
    scanned = f"{hh.kernel_log_lines} lines of {hh.kernel_log_source or 'the kernel log'}"
    if not events:
        return [Result(CHECK, Status.PASS, f"no Xid {window} ({scanned})")]
    gpu_by_pci = {_pci_key(g.pci_bus_id): g.index for g in facts.gpus}
    by_code: dict[int, list[XidEvent]] = {}
    for e in events:
        by_code.setdefault(e.code, []).append(e)
    out = []
    for code, evs in sorted(by_code.items()):
        meaning, fatal, action = XID_CODES.get(
            code, ("not in envcheck's table", False,
                   "look the code up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors)")
        )
        where = Counter(_where(e, gpu_by_pci) for e in evs)
        places = ", ".join(f"{w} x{n}" if n > 1 else w for w, n in where.items())
        last = evs[-1]
        when = f", last at {last.seconds:.0f} s after boot" if last.seconds >= 0 else ""
        out.append(
            Result(
                CHECK,
                Status.FAIL if fatal else Status.WARN,
                f"Xid {code} ({meaning}{_source(code)}) {window} on {places}{when}: "
                f"{last.text[:120]}",
                fix=action,
            )
        )
    return out


# The codes DCGM's health watch fails a GPU on (DcgmHealthWatch.cpp, its XID table)
DCGM_XID_FAIL = frozenset({48, 74, 79, 95, 119, 120, 140})


def _source(code: int) -> str:
    """'; <where the meaning and verdict come from>' for a code of the table, else ''."""
    if code not in XID_CODES:
        return ""
    return "; NVIDIA's Xid catalogue" + ("; DCGM's health watch fails it"
                                         if code in DCGM_XID_FAIL else "")


def _pci_key(bus_id: str) -> tuple[int, int, int]:
    """'00000000:3B:00.0' (NVML) and '0000:3b:00' (Xid line) -> (0, 0x3b, 0)."""
    parts = bus_id.split(".")[0].split(":")
    try:
        if len(parts) == 3:
            return int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
        if len(parts) == 2:
            return 0, int(parts[0], 16), int(parts[1], 16)
    except ValueError:
        pass
    return (-1, -1, -1)


def _where(e: XidEvent, gpu_by_pci: dict[tuple[int, int, int], int]) -> str:
    index = gpu_by_pci.get(_pci_key(e.pci))
    return f"GPU {index} (PCI {e.pci})" if index is not None else f"PCI {e.pci}"
