"""NVLink error counters judged as DCGM's health watch judges them: growth over a window.

Each link has up to five NVML counters since the driver loaded (NvLink): replay and recovery,
the per-link CRC-flit and CRC-data counters of nvmlDeviceGetNvLinkErrorCounter, and the DL CRC
field (NVML_FI_DEV_NVLINK_ERROR_DL_CRC) that `nvidia-smi nvlink -e` prints as "CRC Errors" on
Hopper. Rules (thresholds.py, with their sources):

- replay or recovery grew over the window: fail (DCGM: "replay and recovery errors are
  failures"); non-zero with no window: warn (old events, not dated).
- the CRC count nvidia-smi shows (DL CRC where the GPU answers it, else CRC-flit + CRC-data)
  grew: warn below 100 per second over the window, fail at 100/s or more
  (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR: "CRC errors only matter at rates of 100+ per second").
- where nvidia-smi shows the DL CRC count, the per-link CRC-flit / CRC-data counters are a
  reading nobody else shows (DCGM's health watch reads the *_COUNT_TOTAL fields, which Hopper
  answers NotSupported): reported with their rate, warn only at 100/s or more, never fail.
"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.facts import GpuHealth, NodeFacts, NvLink

from .health_common import gpu_name
from .thresholds import DCGM_HEALTH, DCGM_LIMITS, NVLINK_CRC_PER_S, NVLINK_ERROR_MIN

CHECK = "nvlink"
_HARD = ("replay", "recovery")
_LEGACY_CRC = ("crc_flit", "crc_data")
_FIX_HARD = ("a link that replays or recovers under load corrupts or stalls NCCL traffic: drain "
             "the node, check the link (nvidia-smi nvlink -e -i N; nvidia-smi nvlink -s), then "
             "service the GPU/baseboard if it repeats after a reboot")
_FIX_CRC = ("watch the link's CRC count (nvidia-smi nvlink -e) under load; a steady rate at or "
            "above 100/s is a marginal link: drain and service the board")


def shown_crc(n: NvLink) -> tuple[int | None, str]:
    """(the CRC count `nvidia-smi nvlink -e` shows for the link, its name): the DL CRC field
    where the GPU answers it, else CRC-flit + CRC-data (nvidia-smi prints those two there)."""
    if n.crc is not None:
        return n.crc, "crc"
    if n.crc_flit is None and n.crc_data is None:
        return None, "crc"
    return (n.crc_flit or 0) + (n.crc_data or 0), "crc_flit+crc_data"


def judge_counters(facts: NodeFacts, healths: list[GpuHealth]) -> tuple[list[Result], list[str]]:
    """(results, notes for the pass message). Without level 2's second read, only the totals
    since the driver loaded: replay/recovery non-zero warn, CRC counts are noted."""
    after = {h.index: h for h in facts.gpu_health_after}
    fails: list[str] = []
    warns: list[str] = []
    notes: list[str] = []
    for h in healths:
        later_h = after.get(h.index)
        if later_h is None:
            _totals(h, warns, notes)
            continue
        window = later_h.read_at - h.read_at if h.read_at and later_h.read_at else 0.0
        later = {n.link: n for n in later_h.nvlinks}
        quiet: list[tuple[int, int, int]] = []
        for n in h.nvlinks:
            if n.link in later:
                _growth(h, n, later[n.link], window, fails, warns, quiet)
        _legacy_result(h, quiet, window, warns, notes)
    out = []
    if fails:
        out.append(Result(CHECK, Status.FAIL, "; ".join(fails), fix=_FIX_HARD))
    if warns:
        out.append(Result(CHECK, Status.WARN, "; ".join(warns),
                          fix=_FIX_CRC if not any(k in w for w in warns for k in _HARD)
                          else _FIX_HARD))
    return out, notes


def _totals(h: GpuHealth, warns: list[str], notes: list[str]) -> None:
    shown: dict[int, int] = {}
    legacy: dict[int, int] = {}
    for n in h.nvlinks:
        hard = {k: getattr(n, k) for k in _HARD if getattr(n, k)}
        if hard:
            warns.append(f"{gpu_name(h)} link {n.link}: {_fmt(hard)} since the driver loaded "
                         "(not dated: --level 2 judges growth under load, which fails)")
        crc, _ = shown_crc(n)
        if crc:
            shown[n.link] = crc
        elif n.crc is not None and (n.crc_flit or n.crc_data):
            legacy[n.link] = (n.crc_flit or 0) + (n.crc_data or 0)
    if shown:
        notes.append(f"{gpu_name(h)}: CRC count (as nvidia-smi nvlink -e shows it) "
                     f"{sum(shown.values())} on links {_links(shown)} since the driver loaded "
                     "(DCGM judges CRC only as a rate: --level 2 measures it)")
    if legacy:
        notes.append(f"{gpu_name(h)}: NVML's per-link CRC-flit + CRC-data counters "
                     f"{sum(legacy.values())} on links {_links(legacy)} since the driver "
                     "loaded, while the CRC count nvidia-smi nvlink -e shows is 0: not judged")


def _growth(h: GpuHealth, before: NvLink, now: NvLink, window: float, fails: list[str],
            warns: list[str], quiet: list[tuple[int, int, int]]) -> None:
    """Judge one link's growth; (link, legacy CRC growth, shown CRC growth) into `quiet` where
    only the per-link counters nvidia-smi does not show grew."""
    where = f"{gpu_name(h)} link {before.link}"
    span = f" over {window:.1f} s" if window > 0 else ""
    hard = _diff(before, now, _HARD)
    if sum(hard.values()) >= NVLINK_ERROR_MIN:
        fails.append(f"{where}: +{_fmt(hard)}{span} under load (DCGM's health watch: replay "
                     f"and recovery errors are failures, {DCGM_HEALTH})")
    crc_then, name = shown_crc(before)
    crc_now, _ = shown_crc(now)
    grew = (crc_now or 0) - (crc_then or 0) if crc_then is not None and crc_now is not None \
        else 0
    if grew >= NVLINK_ERROR_MIN:
        rate = grew / window if window > 0 else None
        text = f"{where}: {name} +{grew}{span}" + (f" ({rate:.1f}/s)" if rate is not None else "")
        if rate is not None and rate >= NVLINK_CRC_PER_S:
            fails.append(f"{text}, at or above DCGM's {NVLINK_CRC_PER_S:g}/s ({DCGM_LIMITS})")
        else:
            warns.append(f"{text}, below DCGM's {NVLINK_CRC_PER_S:g}/s failure rate "
                         f"({DCGM_LIMITS}): a warning, as DCGM's health watch makes it")
    if before.crc is None:
        return  # the legacy counters are what nvidia-smi shows, judged just above
    legacy = _diff(before, now, _LEGACY_CRC)
    if legacy:
        quiet.append((before.link, sum(legacy.values()), max(grew, 0)))


def _legacy_result(h: GpuHealth, quiet: list[tuple[int, int, int]], window: float,
                   warns: list[str], notes: list[str]) -> None:
    """One line per GPU for the per-link CRC-flit/data growth nvidia-smi does not show."""
    if not quiet:
        return
    total = sum(q[1] for q in quiet)
    top = max(q[1] for q in quiet)
    rate = top / window if window > 0 else None
    per_s = f", at most {rate:.1f}/s on a link" if rate is not None else ""
    span = f" over {window:.1f} s" if window > 0 else ""
    text = (f"{gpu_name(h)}: NVML's per-link CRC-flit/CRC-data counters "
            f"(nvmlDeviceGetNvLinkErrorCounter) +{total} on links "
            f"{_links({q[0]: q[1] for q in quiet})}{span}{per_s}, while the CRC count "
            f"nvidia-smi nvlink -e shows (NVML_FI_DEV_NVLINK_ERROR_DL_CRC) went "
            f"+{sum(q[2] for q in quiet)}")
    if rate is not None and rate >= NVLINK_CRC_PER_S:
        warns.append(f"{text}: at or above {NVLINK_CRC_PER_S:g}/s ({DCGM_LIMITS})")
    else:
        notes.append(f"{text}: below {NVLINK_CRC_PER_S:g}/s, not judged ({DCGM_LIMITS}: CRC "
                     "errors matter only at 100+/s)")


def _links(counts: dict[int, int]) -> str:
    return ", ".join(str(k) for k in sorted(counts))


def _diff(before: NvLink, now: NvLink, keys: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for k in keys:
        a, b = getattr(before, k), getattr(now, k)
        if a is not None and b is not None and b > a:
            out[k] = b - a
    return out


def _fmt(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())
