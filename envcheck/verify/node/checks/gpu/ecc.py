"""GPU memory health: uncorrectable ECC errors, retired pages and remapped rows.

What DCGM's memory / retired-pages / row-remap health watches and
`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` prints.
"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

from .health_common import gpu_health_or_skip, gpu_name, read_errors, unsupported_note
from .thresholds import (
    DCGM_LIMITS,
    RETIRED_PAGES_DBE_SOFT,
    RETIRED_PAGES_MAX,
    ROW_REMAP_UNCORRECTABLE_MAX,
)

CHECK = "ecc"
_FIELDS = (
    "ecc_enabled",
    "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate",
    "ecc_corrected_volatile",
    "ecc_corrected_aggregate",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "retired_pages_pending",
    "remapped_rows",
)


def check_ecc(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """No uncorrectable ECC error since the driver loaded, no failed or pending row remap,
    retired pages under DCGM's limits (thresholds.py); pending page retirement warns."""
    healths, skip = gpu_health_or_skip(facts, CHECK)
    if skip:
        return skip
    fails: list[str] = []
    warns: list[str] = []
    reset = False
    for h in healths:
        name = gpu_name(h)
        if h.ecc_enabled is False:
            warns.append(f"{name}: ECC is disabled (memory errors go undetected)")
        if h.ecc_uncorrected_volatile:
            fails.append(f"{name}: {h.ecc_uncorrected_volatile} uncorrectable ECC errors since "
                         "the driver loaded")
            reset = True
        elif h.ecc_uncorrected_aggregate:
            warns.append(f"{name}: {h.ecc_uncorrected_aggregate} uncorrectable ECC errors in its "
                         "lifetime (none since the driver loaded)")
        if h.retired_pages_pending:
            warns.append(f"{name}: page retirement pending (takes effect at the next GPU reset; "
                         "DCGM's health watch warns)")
        retired = (h.retired_pages_sbe or 0) + (h.retired_pages_dbe or 0)
        if retired >= RETIRED_PAGES_MAX:
            fails.append(f"{name}: {retired} retired pages, at or above DCGM's limit of "
                         f"{RETIRED_PAGES_MAX} ({DCGM_LIMITS})")
        if h.row_remap_failed:
            fails.append(f"{name}: row remapping failed (no spare rows left)")
        if h.row_remap_pending:
            fails.append(f"{name}: row remapping pending (takes effect at the next GPU reset)")
            reset = True
        if (h.retired_pages_dbe or 0) > RETIRED_PAGES_DBE_SOFT:
            warns.append(f"{name}: {h.retired_pages_dbe} pages retired for double-bit errors, "
                         f"over DCGM's soft limit of {RETIRED_PAGES_DBE_SOFT} (DCGM fails once "
                         "more than one a week follows; watch the count)")
        if (h.remapped_rows_uncorrectable or 0) >= ROW_REMAP_UNCORRECTABLE_MAX:
            warns.append(f"{name}: {h.remapped_rows_uncorrectable} rows remapped for "
                         f"uncorrectable errors, at or above DCGM's "
                         f"{ROW_REMAP_UNCORRECTABLE_MAX} ({DCGM_LIMITS})")
        if (h.ecc_corrected_volatile or 0) >= exp.ecc_corrected_threshold:
            warns.append(f"{name}: {h.ecc_corrected_volatile} correctable ECC errors since the "
                         f"driver loaded (threshold {exp.ecc_corrected_threshold})")
    out = read_errors(healths, _FIELDS, CHECK)
    if fails:
        fix = ("drain the node; reset the GPU (nvidia-smi -r -i N, or reboot) so the pending "
               "retirement/remap takes effect, then check again"
               if reset else "")
        if any("retired pages, at or above" in f for f in fails):
            fix = (fix + "; " if fix else "") + ("a GPU past DCGM's retired-page limit must be "
                                                 "serviced (RMA): open a case with the vendor")
        if any("remapping failed" in f for f in fails):
            fix = (fix + "; " if fix else "") + ("a GPU with a failed row remap must be "
                                                 "serviced (RMA): open a case with the vendor")
        return out + [Result(CHECK, Status.FAIL, "; ".join(fails + warns), fix=fix)]
    if warns:
        return out + [
            Result(
                CHECK,
                Status.WARN,
                "; ".join(warns),
                fix="watch the counts (nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER); "
                "growing correctable or any new uncorrectable errors: drain and service the GPU; "
                "ECC off: nvidia-smi -e 1 and reset",
            )
        ]
    total = sum(h.ecc_corrected_volatile or 0 for h in healths)
    note = unsupported_note(healths, ("ecc_enabled", "remapped_rows", "retired_pages_sbe"))
    return out + [
        Result(
            CHECK,
            Status.PASS,
            f"{len(healths)} GPUs: no uncorrectable ECC error, nothing pending; "
            f"{total} correctable since the driver loaded{note}",
        )
    ]
