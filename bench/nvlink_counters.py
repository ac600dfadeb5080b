"""NVLink error counters: one nvmlDeviceGetFieldValues call per GPU against one
nvmlDeviceGetNvLinkErrorCounter call per link and counter (what verify node --level 1 read
before), on every GPU: time of each way, and whether they agree (the batched crc total against
crc_flit + crc_data read one by one). Counters only grow, so a one-by-one read taken between
two batched reads must lie between them.

    python3 bench/nvlink_counters.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envcheck.verify.facts.nvml import (  # noqa: E402
    _NVLINK_COUNTERS,
    _VALUE_MEMBER,
    nvlink_counters_batched,
)


def dl_crc(nv, h, links: list[int]) -> dict[tuple[int, str], int]:
    """NVML_FI_DEV_NVLINK_ERROR_DL_CRC per link (one call): a candidate to stand for crc_flit
    + crc_data, which would save two calls per link. On 2x H200 (driver 580.159.04) it read 0
    on every link whose one-by-one CRC-data counters were 1-38: it is not that sum."""
    values = nv.nvmlDeviceGetFieldValues(h, [(nv.NVML_FI_DEV_NVLINK_ERROR_DL_CRC, k)
                                             for k in links])
    return {(k, "crc"): int(getattr(v.value, _VALUE_MEMBER[v.valueType]))
            for k, v in zip(links, values, strict=True) if v.nvmlReturn == 0}


_TOTALS = {"crc_flit": "CRC_FLIT", "crc_data": "CRC_DATA", "replay": "REPLAY",
           "recovery": "RECOVERY"}


def device_totals(nv, h) -> dict[str, object]:
    """The per-GPU totals over all links (NVML_FI_DEV_NVLINK_<X>_ERROR_COUNT_TOTAL), each
    asked with no scope and with scope 0, in one call: what each returns (value or NVML
    return code)."""
    asks = [(name, scope) for name in _TOTALS for scope in (None, 0)]
    ids = [getattr(nv, f"NVML_FI_DEV_NVLINK_{_TOTALS[n]}_ERROR_COUNT_TOTAL") for n, _ in asks]
    ids = [fid if scope is None else (fid, scope) for fid, (_, scope) in zip(ids, asks,
                                                                             strict=True)]
    values = nv.nvmlDeviceGetFieldValues(h, ids)
    out: dict[str, object] = {}
    for (name, scope), v in zip(asks, values, strict=True):
        member = _VALUE_MEMBER.get(v.valueType)
        out[f"{name}/{scope}"] = (int(getattr(v.value, member)) if v.nvmlReturn == 0 and member
                                  else f"ret {v.nvmlReturn}")
    return out


def main() -> None:
    import pynvml as nv

    nv.nvmlInit()
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        try:
            links = [k for k in range(18) if nv.nvmlDeviceGetNvLinkState(h, k) == 1]
        except nv.NVMLError_NotSupported:
            print(f"GPU {i}: no NVLink (NVML: not supported): nothing to compare")
            continue
        t = time.perf_counter()
        before = nvlink_counters_batched(nv, h, links) | dl_crc(nv, h, links)
        batched_s = time.perf_counter() - t
        t = time.perf_counter()
        single = {(k, name): int(nv.nvmlDeviceGetNvLinkErrorCounter(h, k, code))
                  for k in links for name, code in _NVLINK_COUNTERS}
        single_s = time.perf_counter() - t
        after = nvlink_counters_batched(nv, h, links) | dl_crc(nv, h, links)
        for k in links:  # the batched crc total against the two counters it stands for
            single[(k, "crc")] = single[(k, "crc_flit")] + single[(k, "crc_data")]
        covered = sorted(set(before) & set(after))
        ok = all(before[key] <= single[key] <= after[key] for key in covered)
        nonzero = sum(1 for k in links if single[(k, "crc")])
        print(f"GPU {i}: {len(links)} links up; batched {len(before)} counters in "
              f"{batched_s * 1e3:.1f} ms, one by one {len(single)} in {single_s * 1e3:.1f} ms "
              f"({single_s / len(single) * 1e3:.2f} ms each); agree on {len(covered)} "
              f"({sorted({name for _, name in covered})}): {ok}; crc = crc_flit + crc_data "
              f"checked on {nonzero} links with non-zero CRC counts")
        sums = {name: sum(single[(k, name)] for k in links) for name in _TOTALS}
        print(f"  device totals: {device_totals(nv, h)}; sums of the one-by-one reads: {sums}")
        if not ok:
            print("  disagree:", [(k, before[k], single[k], after[k]) for k in covered
                                  if not before[k] <= single[k] <= after[k]][:8])


if __name__ == "__main__":
    main()
