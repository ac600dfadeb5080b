"""Every GPU health threshold the checks apply, with the authority it comes from.

One table (THRESHOLDS) that docs/verify-node.md repeats row for row and tests/data/
health-authorities.md backs with the lines of the sources (repository, path, commit, line).
The checks import the numbers from here and name the row's source in their messages.

Counters NVML keeps since the driver loaded are judged the way DCGM's health watch judges
them: as the growth between two reads over a window (verify node --level 2: the load), and,
for the CRC counters, as a rate per second over that window. A count read once, with no
window, dates nothing: it is reported, and judged only where the source judges a total.
"""

from __future__ import annotations

from envcheck.record import frozen

# DCGM 4.6.0 (NVIDIA/DCGM 72fa3fe), common/DcgmGPUHardwareLimits.h
DCGM_LIMITS = "DCGM common/DcgmGPUHardwareLimits.h"
DCGM_HEALTH = "DCGM modules/health/DcgmHealthWatch.cpp"
NVLINK_ERROR_MIN = 1  # DCGM_LIMIT_MAX_NVLINK_ERROR: growth that counts at all
NVLINK_CRC_PER_S = 100.0  # DCGM_LIMIT_MAX_NVLINK_CRC_ERROR: "CRC errors only matter at 100+/s"
RETIRED_PAGES_MAX = 63  # DCGM_LIMIT_MAX_RETIRED_PAGES: SBE + DBE retired pages -> fail
RETIRED_PAGES_DBE_SOFT = 15  # DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT: DBE pages
ROW_REMAP_UNCORRECTABLE_MAX = 512  # DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE -> warn
# DcgmHealthWatch::GetExpectedPcieReplayRate: a bit error rate of 1e-12 at each generation's
# lane speed, errors per minute per lane (gen 1..6); the expected rate is ceil(this * lanes)
PCIE_REPLAYS_PER_LANE_PER_MIN = (0.15, 0.3, 0.48, 0.96, 1.92, 3.84)


def pcie_replays_allowed_per_min(gen: int, width: int) -> int:
    """DCGM's expected PCIe replays per minute for a link of `gen` and `width` (its health
    watch warns above it); gen beyond the table is capped at the last generation, as DCGM does."""
    import math

    rate = PCIE_REPLAYS_PER_LANE_PER_MIN[max(1, min(gen, len(PCIE_REPLAYS_PER_LANE_PER_MIN))) - 1]
    return math.ceil(round(rate * max(width, 1), 6))


@frozen
class Threshold:
    check: str  # the envcheck check that applies it
    condition: str  # the counter or condition
    reading: str  # how it is read (NVML call or field)
    warn: str  # the WARN rule ("" none)
    fail: str  # the FAIL rule ("" none)
    source: str  # where the rule comes from


THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("nvlink", "NVLink replay errors",
              "nvmlDeviceGetFieldValues NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY (scope = link), else "
              "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_REPLAY)",
              "non-zero since the driver loaded (no window: the events are not dated)",
              f"grew by >= {NVLINK_ERROR_MIN} over the load window",
              f"{DCGM_HEALTH} MonitorNVLink4Fields: replay and recovery errors are failures; "
              f"{DCGM_LIMITS} DCGM_LIMIT_MAX_NVLINK_ERROR"),
    Threshold("nvlink", "NVLink recovery errors",
              "NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY (scope = link), else "
              "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_RECOVERY)",
              "non-zero since the driver loaded", f"grew by >= {NVLINK_ERROR_MIN} over the window",
              f"{DCGM_HEALTH} MonitorNVLink4Fields"),
    Threshold("nvlink", "NVLink CRC errors as nvidia-smi nvlink -e shows them ('CRC Errors')",
              "NVML_FI_DEV_NVLINK_ERROR_DL_CRC (scope = link); on GPUs that do not answer it, "
              "nvmlDeviceGetNvLinkErrorCounter CRC_FLIT + CRC_DATA (what nvidia-smi shows there)",
              f"grew over the window at < {NVLINK_CRC_PER_S:g}/s",
              f"grew at >= {NVLINK_CRC_PER_S:g}/s over the window",
              f"{DCGM_LIMITS} DCGM_LIMIT_MAX_NVLINK_CRC_ERROR (RM: CRC errors only matter at "
              f"100+/s); {DCGM_HEALTH} MonitorNVLink4Fields"),
    Threshold("nvlink", "NVLink per-link CRC-flit / CRC-data counters where nvidia-smi shows "
              "the DL CRC counter instead (Hopper)",
              "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_CRC_FLIT / _CRC_DATA)",
              f"grew at >= {NVLINK_CRC_PER_S:g}/s over the window", "",
              f"{DCGM_LIMITS} DCGM_LIMIT_MAX_NVLINK_CRC_ERROR; DCGM's health watch reads "
              "NVML_FI_DEV_NVLINK_CRC_*_ERROR_COUNT_TOTAL (dcgmlib/src/dcgm_fields.cpp), which "
              "Hopper answers NotSupported, so DCGM does not judge these there"),
    Threshold("nvlink", "NVLink link state",
              "nvmlDeviceGetNvLinkState per link", "",
              "a link down that another GPU of the same model has up",
              f"{DCGM_HEALTH} MonitorNVLinkStatus (a link down fails)"),
    Threshold("pcie", "PCIe replays",
              "nvmlDeviceGetPcieReplayCounter",
              "grew over the window faster than ceil(per-lane rate x width) per minute "
              "(gen3 x16: 8/min, gen4 x16: 16/min, gen5 x16: 31/min)", "",
              f"{DCGM_HEALTH} MonitorPcie, GetExpectedPcieReplayRate (BER 1e-12 per lane)"),
    Threshold("pcie", "PCIe link generation / width",
              "nvmlDeviceGetCurrPcieLinkGeneration/Width against ...GetMaxPcieLink...",
              "below the maximum with no load (idle GPUs downshift)",
              "below the maximum under the level 2 load",
              "gcm check-nvidia-smi / NHC check_nv_pci; NVIDIA's GPU debug guidelines"),
    Threshold("ecc", "volatile uncorrectable (DBE) ECC errors",
              "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)", "", "> 0",
              f"{DCGM_HEALTH} MonitorMemVolatileDbes (fail for any volatile DBE)"),
    Threshold("ecc", "retired pages (SBE + DBE)",
              "nvmlDeviceGetRetiredPages(MULTIPLE_SINGLE_BIT / DOUBLE_BIT)",
              f"DBE pages > {RETIRED_PAGES_DBE_SOFT} (DCGM fails only when more than one a "
              "week follows; envcheck has no history)",
              f"SBE + DBE >= {RETIRED_PAGES_MAX}",
              f"{DCGM_LIMITS} DCGM_LIMIT_MAX_RETIRED_PAGES(_SOFT_LIMIT); {DCGM_HEALTH} "
              "MonitorMemSbeDbeRetiredPages"),
    Threshold("ecc", "page retirement pending",
              "nvmlDeviceGetRetiredPagesPendingStatus", "pending", "",
              f"{DCGM_HEALTH} MonitorMemRetiredPending (warn)"),
    Threshold("ecc", "row remap failed / pending",
              "nvmlDeviceGetRemappedRows (failure, pending)", "",
              "failed; pending (the remap takes effect only at a GPU reset)",
              f"{DCGM_HEALTH} MonitorMemRowRemapFailures (fail); NVIDIA's GPU memory error "
              "management guide (a pending remap needs a GPU reset)"),
    Threshold("ecc", "rows remapped for uncorrectable errors",
              "nvmlDeviceGetRemappedRows (uncorrectable)",
              f">= {ROW_REMAP_UNCORRECTABLE_MAX}", "",
              f"{DCGM_LIMITS} DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE; {DCGM_HEALTH} "
              "MonitorMemRowRemapUncorrectable (warn)"),
    Threshold("ecc", "correctable ECC errors since the driver loaded",
              "nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE)",
              ">= --ecc-corrected-threshold (default 100)", "",
              "envcheck's own (DCGM's SBE rate limit DCGM_LIMIT_MAX_SBE_RATE is 'a dummy value')"),
    Threshold("xid", "Xid events in the kernel log",
              "/dev/kmsg, dmesg or journalctl -k: 'NVRM: Xid (PCI:...): N'",
              "codes DCGM's health watch warns on and the application-caused ones",
              "48, 61, 62, 64, 74, 79, 95, 119, 120, 140, 154",
              "NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors); "
              f"{DCGM_HEALTH} the XID table (48, 74, 79, 95, 119, 120, 140 fail)"),
)
