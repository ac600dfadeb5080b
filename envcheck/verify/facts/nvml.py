"""GPUs through NVML (pynvml, imported lazily): identity, memory, processes, links, and the
per-GPU health reads."""

from __future__ import annotations

import sys
import time
import warnings

from .caches import _cached, dirs_key
from .model import (
    NVML_INIT_FAILED,
    NVML_MISMATCH,
    NVML_NO_DRIVER,
    NVML_NO_GPU,
    NVML_NO_LIBRARY,
    NVML_NO_MODULE,
    NVML_OK,
    NVML_READ_FAILED,
    Gpu,
    GpuHealth,
    GpuProcess,
    NvLink,
)
from .proctree import read_process

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

# ---- NVML -----------------------------------------------------------------------------------


def _import_pynvml() -> Any:
    # The `pynvml` wheel that redirects to nvidia-ml-py warns on import; the warning is noise
    # inside a worker's log, the module works.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pynvml
    return pynvml


def _try_pynvml() -> Any:
    """The pynvml module, or why it does not import."""
    try:
        return _import_pynvml()
    except Exception as e:
        return f"pynvml is not importable ({type(e).__name__}: {e})"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# nvmlInit's error codes (nvml.h) that name what is missing
_INIT_STATES = {
    12: (NVML_NO_LIBRARY, "libnvidia-ml.so.1 (the driver's NVML library) could not be loaded"),
    9: (NVML_NO_DRIVER, "the NVIDIA kernel driver is not loaded"),
    18: (NVML_MISMATCH, "libnvidia-ml.so and the loaded kernel module are different versions"),
}


def _nvml_facts() -> tuple[str, str, str, str, tuple[Gpu, ...]]:
    """(nvml_state, nvml_error, driver version, CUDA driver version, GPUs)."""
    # The import (with its warnings filter) costs more than the rest of a GPU-less collection;
    # its outcome changes only when sys.path's directories do (pynvml installed or removed).
    nv = _cached("pynvml", dirs_key(sys.path), _try_pynvml)
    if isinstance(nv, str):
        return (NVML_NO_MODULE, nv, "", "", ())
    try:
        # NVML stays initialised for the life of the process (it is reference counted and
        # released at exit): re-initialising costs far more than the rest of a collection.
        nv.nvmlDeviceGetCount()
    except nv.NVMLError_Uninitialized:
        try:
            nv.nvmlInit()
        except nv.NVMLError as e:
            state, what = _INIT_STATES.get(getattr(e, "value", None), (NVML_INIT_FAILED, ""))
            why = f"{what} ({e})" if what else str(e)
            return (state, f"NVML did not start: {why}", "", "", ())
    except nv.NVMLError as e:
        return (NVML_INIT_FAILED, f"NVML did not answer: {e}", "", "", ())
    global _NVML_STATIC
    try:
        count = nv.nvmlDeviceGetCount()
        static = _NVML_STATIC
        if static.get("count") != count:  # first call, or the driver's view changed
            cuda = nv.nvmlSystemGetCudaDriverVersion_v2()  # 12040 -> "12.4"
            # A new dict, swapped in whole: a client and an in-process scheduler may collect
            # at the same time in two threads.
            static = {
                "count": count,
                "driver": _text(nv.nvmlSystemGetDriverVersion()),
                "cuda": f"{cuda // 1000}.{(cuda % 1000) // 10}",
            }
            _NVML_STATIC = static
        driver, cuda_text = static["driver"], static["cuda"]
        gpus = tuple(_gpu_facts(nv, i, static) for i in range(count))
    except nv.NVMLError as e:
        return (NVML_READ_FAILED, f"NVML failed while reading GPUs: {e}", "", "", ())
    if not gpus:
        return (NVML_NO_GPU, "NVML answered but found no GPU", driver, cuda_text, ())
    return (NVML_OK, "", driver, cuda_text, gpus)


# What NVML says that cannot change while the driver is loaded (it is kept initialised): the
# driver versions and each GPU's identity. Memory use, processes, NVLink state and the PCIe link
# (which trains down when idle) are read fresh every time.
_NVML_STATIC: dict[Any, Any] = {}


def _gpu_facts(nv: Any, index: int, known: dict[Any, Any]) -> Gpu:
    h = nv.nvmlDeviceGetHandleByIndex(index)
    mem = nv.nvmlDeviceGetMemoryInfo(h)
    static = known.get(index)
    if static is None:
        try:
            cc = tuple(int(x) for x in nv.nvmlDeviceGetCudaComputeCapability(h))
        except nv.NVMLError:
            cc = (0, 0)
        static = known[index] = (
            _text(nv.nvmlDeviceGetUUID(h)),
            _text(nv.nvmlDeviceGetName(h)),
            int(mem.total) // 2**20,
            (cc[0], cc[1]),
            _text(nv.nvmlDeviceGetPciInfo(h).busId),
        )
    uuid, name, total_mib, cc, bus_id = static
    nvlinks = 0
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            if nv.nvmlDeviceGetNvLinkState(h, link) == nv.NVML_FEATURE_ENABLED:
                nvlinks += 1
        except nv.NVMLError:  # NotSupported (no NVLink) or InvalidArgument (past the last link)
            continue
    try:
        gen = int(nv.nvmlDeviceGetCurrPcieLinkGeneration(h))
        width = int(nv.nvmlDeviceGetCurrPcieLinkWidth(h))
    except nv.NVMLError:
        gen = width = 0
    return Gpu(
        index=index,
        uuid=uuid,
        name=name,
        memory_total_mib=total_mib,
        memory_used_mib=int(mem.used) // 2**20,
        compute_capability=cc,
        pci_bus_id=bus_id,
        nvlinks_active=nvlinks,
        pcie_gen=gen,
        pcie_width=width,
        processes=_gpu_processes(nv, h),
    )


def _gpu_processes(nv: Any, handle: Any) -> tuple[GpuProcess, ...]:
    used: dict[int, int] = {}
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        try:
            procs = getattr(nv, getter)(handle)
        except (nv.NVMLError, AttributeError):
            continue
        for p in procs:
            mib = int(p.usedGpuMemory) // 2**20 if p.usedGpuMemory else 0
            used[int(p.pid)] = max(used.get(int(p.pid), 0), mib)
    out = []
    for pid, mib in used.items():
        info = read_process(pid)  # None: another pid namespace's process, or gone
        out.append(GpuProcess(pid=pid, used_mib=mib, user=info.user if info else "",
                              command=info.command if info else ""))
    return tuple(out)


# NVML errors that mean "this GPU or driver cannot tell", not "something is wrong".
_NVML_UNSUPPORTED = (3, 13)  # NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND


def collect_gpu_health(indices: tuple[int, ...] | list[int] | None = None) -> tuple[GpuHealth, ...]:
    """Health reads for each GPU NVML sees (or `indices`); () without NVML. Never raises."""
    nv = _cached("pynvml", dirs_key(sys.path), _try_pynvml)
    if isinstance(nv, str):
        return ()
    try:
        count = nv.nvmlDeviceGetCount()
    except Exception:  # not initialised (collect_node_facts starts it) or no driver
        return ()
    out = []
    for i in range(count) if indices is None else indices:
        try:
            out.append(gpu_health(nv, i))
        except Exception as e:  # the handle itself failed (a GPU that fell off the bus)
            out.append(GpuHealth(index=i, errors=(f"handle: {e}",)))
    return tuple(out)


def collect_gpu_clocks(index: int) -> GpuHealth | None:
    """Only what the gemm check reads while a GPU multiplies: its SM clock, temperature and
    clocks-event reasons (three NVML calls, against about 80 for a full health read with 18
    NVLink links: a full read every 0.25 s of every GPU would compete with the multiply it
    watches). None without NVML."""
    nv = _cached("pynvml", dirs_key(sys.path), _try_pynvml)
    if isinstance(nv, str):
        return None
    try:
        h = nv.nvmlDeviceGetHandleByIndex(index)
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return GpuHealth(index=index, read_at=time.time(),
                         sm_clock_mhz=int(nv.nvmlDeviceGetClockInfo(h, 1)),  # NVML_CLOCK_SM
                         temperature_c=int(nv.nvmlDeviceGetTemperature(h, 0)),  # TEMPERATURE_GPU
                         clocks_event_reasons=int(reasons(h)))
    except Exception:  # NVML gone or a call missing: the run reports no clock, as without NVML
        return None


def gpu_health(nv: Any, index: int) -> GpuHealth:
    """One GPU's health reads through pynvml `nv`; each read guarded on its own."""
    h = nv.nvmlDeviceGetHandleByIndex(index)
    unsupported: list[str] = []
    errors: list[str] = []

    def read(name: str, call: Any, *args: Any) -> Any:
        try:
            return call(h, *args)
        except nv.NVMLError as e:
            if getattr(e, "value", None) in _NVML_UNSUPPORTED:
                unsupported.append(name)
            else:
                errors.append(f"{name}: {e}")
        except AttributeError:  # a pynvml too old to have the function
            unsupported.append(name)
        return None

    def fn(name: str) -> Any:
        return getattr(nv, name, None) or _missing

    def _missing(*_: Any) -> Any:
        raise AttributeError

    d: dict[str, Any] = {"index": index, "read_at": time.time()}
    known = _NVML_STATIC.get(index)  # identity _gpu_facts read once: (uuid, name, MiB, cc, bus)
    if known is not None:
        d["uuid"], d["pci_bus_id"] = known[0], known[4]
    else:
        d["uuid"] = _text(read("uuid", fn("nvmlDeviceGetUUID")) or "")
        pci = read("pci", fn("nvmlDeviceGetPciInfo"))
        d["pci_bus_id"] = _text(pci.busId) if pci is not None else ""
    mode = read("ecc_enabled", fn("nvmlDeviceGetEccMode"))
    d["ecc_enabled"] = bool(mode[0]) if mode is not None else None
    if mode is not None and mode[0]:  # counters are NotSupported / meaningless with ECC off
        d.update(_ecc_reads(nv, read, fn))
    for key, call in (
        ("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
        ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
        ("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
        ("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth"),
        ("pcie_replays", "nvmlDeviceGetPcieReplayCounter"),
    ):
        value = read(key, fn(call))
        d[key] = int(value) if value is not None else None
    d["nvlinks"] = _nvlinks(nv, h, unsupported, errors)
    persistence = read("persistence_mode", fn("nvmlDeviceGetPersistenceMode"))
    d["persistence_mode"] = bool(persistence) if persistence is not None else None
    # "throttle" was renamed "clocks event" in driver 535; older libnvidia-ml lacks the new name
    reasons = read("clocks_event_reasons", fn("nvmlDeviceGetCurrentClocksEventReasons"))
    if reasons is None and "clocks_event_reasons" in unsupported:
        unsupported.remove("clocks_event_reasons")
        reasons = read("clocks_event_reasons", fn("nvmlDeviceGetCurrentClocksThrottleReasons"))
    d["clocks_event_reasons"] = int(reasons) if reasons is not None else None
    mig = read("mig_mode", fn("nvmlDeviceGetMigMode"))
    if mig is not None:
        d["mig_mode"], d["mig_mode_pending"] = int(mig[0]), int(mig[1])
    compute = read("compute_mode", fn("nvmlDeviceGetComputeMode"))
    d["compute_mode"] = int(compute) if compute is not None else None
    d.update(_clock_and_temperature(read, fn))
    d["unsupported"] = tuple(unsupported)
    d["errors"] = tuple(errors)
    return GpuHealth(**d)


def _clock_and_temperature(read: Any, fn: Any) -> dict[str, Any]:
    # NVML_CLOCK_SM = 1, NVML_TEMPERATURE_GPU = 0 (nvml.h)
    clock = read("sm_clock_mhz", fn("nvmlDeviceGetClockInfo"), 1)
    temperature = read("temperature_c", fn("nvmlDeviceGetTemperature"), 0)
    return {
        "sm_clock_mhz": int(clock) if clock is not None else None,
        "temperature_c": int(temperature) if temperature is not None else None,
    }


def _ecc_reads(nv: Any, read: Any, fn: Any) -> dict[str, Any]:
    """ECC error counters, retired pages and remapped rows of a GPU with ECC on, through
    gpu_health's guarded `read` and function lookup `fn`."""
    out: dict[str, Any] = {}
    total = fn("nvmlDeviceGetTotalEccErrors")
    # nvml.h's values, should a pynvml lack the names
    unc = getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    cor = getattr(nv, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    vol, agg = getattr(nv, "NVML_VOLATILE_ECC", 0), getattr(nv, "NVML_AGGREGATE_ECC", 1)
    out["ecc_uncorrected_volatile"] = read("ecc_uncorrected_volatile", total, unc, vol)
    out["ecc_uncorrected_aggregate"] = read("ecc_uncorrected_aggregate", total, unc, agg)
    out["ecc_corrected_volatile"] = read("ecc_corrected_volatile", total, cor, vol)
    out["ecc_corrected_aggregate"] = read("ecc_corrected_aggregate", total, cor, agg)
    # Page retirement (before Ampere) and row remapping (Ampere on): each GPU supports one
    pages = fn("nvmlDeviceGetRetiredPages_v2") if hasattr(nv, "nvmlDeviceGetRetiredPages_v2") \
        else fn("nvmlDeviceGetRetiredPages")
    sbe = read("retired_pages_sbe", pages, 0)  # MULTIPLE_SINGLE_BIT_ECC_ERRORS
    dbe = read("retired_pages_dbe", pages, 1)  # DOUBLE_BIT_ECC_ERROR
    out["retired_pages_sbe"] = len(sbe) if sbe is not None else None
    out["retired_pages_dbe"] = len(dbe) if dbe is not None else None
    pending = read("retired_pages_pending", fn("nvmlDeviceGetRetiredPagesPendingStatus"))
    out["retired_pages_pending"] = bool(pending) if pending is not None else None
    rows = read("remapped_rows", fn("nvmlDeviceGetRemappedRows"))
    if rows is not None:
        out["remapped_rows_correctable"], out["remapped_rows_uncorrectable"] = rows[0], rows[1]
        out["row_remap_pending"], out["row_remap_failed"] = bool(rows[2]), bool(rows[3])
    return out


_NVLINK_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))
_FIELD_NAMES = {"replay": "REPLAY", "recovery": "RECOVERY", "crc_flit": "CRC_FLIT",
                "crc_data": "CRC_DATA"}
# nvmlFieldValue_t.valueType -> the union member that holds it (nvml.h, nvmlValueType_t)
_VALUE_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal",
                 6: "usVal"}


def nvlink_counters_batched(nv: Any, h: Any, links: Any) -> dict[tuple[int, str], int]:
    """The link error counters NVML's field values hold, in one nvmlDeviceGetFieldValues call
    instead of one nvmlDeviceGetNvLinkErrorCounter call per link and counter. Asked: the
    per-link fields (replay, recovery: NVML_FI_DEV_NVLINK_ERROR_DL_*, scope = the link) and
    the older per-link counters (..._ERROR_COUNT_L<n>) where the bindings name them; and
    NVML_FI_DEV_NVLINK_ERROR_DL_CRC ("crc"), the CRC count `nvidia-smi nvlink -e` prints on
    Hopper, which no nvmlDeviceGetNvLinkErrorCounter type returns. What a GPU does not answer
    here is read one by one by the caller."""
    keys: list[tuple[int, str]] = []
    ids: list[Any] = []
    for link in links:
        for name, field in (("replay", "REPLAY"), ("recovery", "RECOVERY"), ("crc", "CRC")):
            fid = getattr(nv, f"NVML_FI_DEV_NVLINK_ERROR_DL_{field}", None)
            if fid is not None:
                keys.append((link, name))
                ids.append((fid, link))
        for name, field in _FIELD_NAMES.items():
            fid = getattr(nv, f"NVML_FI_DEV_NVLINK_{field}_ERROR_COUNT_L{link}", None)
            if fid is not None:
                keys.append((link, name))
                ids.append(fid)
    if not ids or not hasattr(nv, "nvmlDeviceGetFieldValues"):
        return {}
    try:
        values = nv.nvmlDeviceGetFieldValues(h, ids)
    except nv.NVMLError:
        return {}
    out: dict[tuple[int, str], int] = {}
    for key, v in zip(keys, values):
        member = _VALUE_MEMBER.get(getattr(v, "valueType", -1))
        if getattr(v, "nvmlReturn", -1) == 0 and member and key not in out:
            out[key] = int(getattr(v.value, member))
    return out


def _nvlinks(nv: Any, h: Any, unsupported: list[str], errors: list[str]) -> tuple[NvLink, ...]:
    states: list[tuple[int, bool]] = []
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            up = nv.nvmlDeviceGetNvLinkState(h, link) == getattr(nv, "NVML_FEATURE_ENABLED", 1)
        except nv.NVMLError as e:
            if link == 0 and getattr(e, "value", None) in _NVML_UNSUPPORTED:
                unsupported.append("nvlink")  # no NVLink on this GPU: stop asking
                return ()
            continue  # InvalidArgument: past this GPU's last link
        states.append((link, up))
    batched = nvlink_counters_batched(nv, h, [link for link, up in states if up])
    links = []
    counters_unsupported = False
    for link, up in states:
        counts: dict[str, int | None] = {}
        for name, code in _NVLINK_COUNTERS:
            value = batched.get((link, name))
            if value is None and up and not counters_unsupported:
                try:
                    value = int(nv.nvmlDeviceGetNvLinkErrorCounter(h, link, code))
                except nv.NVMLError as e:
                    if getattr(e, "value", None) in _NVML_UNSUPPORTED:
                        counters_unsupported = True  # the same for every link of this GPU
                    else:
                        errors.append(f"nvlink {link} {name}: {e}")
            counts[name] = value
        links.append(NvLink(link, up, crc=batched.get((link, "crc")), **counts))
    if counters_unsupported:
        unsupported.append("nvlink_error_counters")
    return tuple(links)
