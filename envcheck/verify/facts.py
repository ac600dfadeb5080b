"""What one process sees of its machine, as plain frozen data.

This module imports only the standard library (and pynvml, lazily). It is shipped *by value*
to Dask workers and schedulers that do not have envcheck installed, so it must never import
anything else from envcheck, nor torch/cupy unless asked.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import getpass
import ipaddress
import json
import os
import platform
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_mib: int
    user: str = ""  # "" where unreadable


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index (physical, not affected by CUDA_VISIBLE_DEVICES)
    uuid: str
    name: str
    memory_total_mib: int
    memory_used_mib: int
    compute_capability: tuple[int, int]
    pci_bus_id: str
    nvlinks_active: int = 0
    pcie_gen: int = 0
    pcie_width: int = 0
    processes: tuple[GpuProcess, ...] = ()


@dataclass(frozen=True)
class UcxFacts:
    module: str = ""  # "ucxx", "ucp" (ucx-py) or "" when neither imports
    module_version: str = ""
    ucx_version: str = ""
    transports: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class ImportProbe:
    """Whether one module imported in a fresh child process (catches missing OS libraries)."""

    module: str
    ok: bool
    seconds: float = 0.0
    error: str = ""  # last line of the exception, "timed out after 60 s", "crashed (signal 11)"


@dataclass(frozen=True)
class LibraryProbe:
    """Whether one shared library resolves through the dynamic loader, as this Python sees it."""

    name: str  # as asked: "nccl", "libopenblas.so.0"
    found: bool
    path: str = ""  # the file the loader mapped
    error: str = ""


# ---- health facts (issue 12): what DCGM level 1, gcm and NHC read, as plain data ------------
# Every NVML value is Optional: None means "not read"; the field's name is then in
# GpuHealth.unsupported (NVML said NotSupported: no ECC on a GeForce, no NVLink on PCIe cards)
# or in GpuHealth.errors with NVML's message.


@dataclass(frozen=True)
class NvLink:
    link: int
    up: bool
    replay: int | None = None  # NVML_NVLINK_ERROR_DL_REPLAY, since the driver loaded
    recovery: int | None = None  # DL_RECOVERY
    crc_flit: int | None = None  # DL_CRC_FLIT
    crc_data: int | None = None  # DL_CRC_DATA


@dataclass(frozen=True)
class GpuHealth:
    index: int  # NVML index, as Gpu.index
    uuid: str = ""
    pci_bus_id: str = ""
    ecc_enabled: bool | None = None
    ecc_uncorrected_volatile: int | None = None  # since the driver loaded
    ecc_uncorrected_aggregate: int | None = None  # life of the GPU
    ecc_corrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    retired_pages_sbe: int | None = None  # pages retired for repeated single-bit errors
    retired_pages_dbe: int | None = None  # ... for double-bit errors
    retired_pages_pending: bool | None = None  # retirement waits for a GPU reset
    remapped_rows_correctable: int | None = None  # A100/H100 class: rows, not pages
    remapped_rows_uncorrectable: int | None = None
    row_remap_pending: bool | None = None  # a remap waits for a GPU reset
    row_remap_failed: bool | None = None  # no spare row left: the GPU needs service
    pcie_gen: int | None = None  # current link, as trained now (idle GPUs may downshift)
    pcie_width: int | None = None
    pcie_gen_max: int | None = None  # the most this GPU in this slot can do
    pcie_width_max: int | None = None
    pcie_replays: int | None = None
    nvlinks: tuple[NvLink, ...] = ()  # the links NVML knows for this GPU
    persistence_mode: bool | None = None
    clocks_event_reasons: int | None = None  # bitmask (nvmlClocksEventReason*)
    mig_mode: int | None = None  # current: 1 enabled, 0 disabled
    mig_mode_pending: int | None = None
    compute_mode: int | None = None  # NVML_COMPUTEMODE_*: 0 default, 2 prohibited, 3 excl.
    unsupported: tuple[str, ...] = ()  # fields NVML answered NotSupported / not in this driver
    errors: tuple[str, ...] = ()  # "field: NVML error" for any other failure


@dataclass(frozen=True)
class XidEvent:
    """One `NVRM: Xid (PCI:0000:3b:00): 79, ...` kernel log line."""

    code: int
    pci: str  # as the line gives it: "0000:3b:00" (domain:bus:device)
    seconds: float = -1.0  # since boot; -1 when the line carries no monotonic time
    text: str = ""  # what follows the code, cut to 200 characters


@dataclass(frozen=True)
class NetInterface:
    name: str
    up: bool  # IFF_UP (administratively up)
    operstate: str = ""  # /sys/class/net/<name>/operstate: "up", "down", "unknown" (lo)


@dataclass(frozen=True)
class AddressLink:
    """The network interface that holds the IP of this process's Dask address, and its speed."""

    ip: str = ""  # "10.77.0.2"; "" when not looked up (no address, not a worker)
    interface: str = ""  # "eth0"; "" when no interface of this process holds the IP
    speed_mbps: int = -1  # /sys/class/net/<interface>/speed; -1 unknown (lo, virtual, down)
    error: str = ""  # why the interface or its speed is unknown


@dataclass(frozen=True)
class IbPort:
    device: str  # "mlx5_0"
    port: int
    state: str = ""  # "ACTIVE", "DOWN", "INIT", "ARMED"
    phys_state: str = ""  # "LinkUp", "Polling", "Disabled"
    rate: str = ""  # "200 Gb/sec (4X HDR)"
    link_layer: str = ""  # "InfiniBand" or "Ethernet" (RoCE)


@dataclass(frozen=True)
class HostHealth:
    collected: bool = False  # False in facts from a collector older than these fields
    memlock_soft: int | None = None  # bytes; -1 unlimited (RLIMIT_MEMLOCK of this process)
    memlock_hard: int | None = None
    nofile_soft: int | None = None  # -1 unlimited
    nofile_hard: int | None = None
    shm_bytes: int | None = None  # /dev/shm size (statvfs)
    shm_free_bytes: int | None = None
    shm_error: str = ""
    net_interfaces: tuple[NetInterface, ...] = ()
    ib_ports: tuple[IbPort, ...] = ()
    ib_error: str = ""  # why no port was read ("/sys/class/infiniband absent")
    modules: tuple[str, ...] = ()  # loaded kernel modules among KERNEL_MODULES
    kernel_log_source: str = ""  # "/dev/kmsg", "dmesg", "journalctl -k", or a file
    kernel_log_error: str = ""  # why no kernel log was read
    kernel_log_lines: int = 0  # records / lines scanned
    xid_events: tuple[XidEvent, ...] = ()
    uptime_seconds: float = -1.0


@dataclass(frozen=True)
class NodeFacts:
    host: str
    pid: int
    user: str
    role: str  # "local", "client", "scheduler", "worker"
    address: str  # the Dask address for cluster processes, else ""
    python: str  # "3.11.7"
    python_executable: str
    platform: str  # "linux-64", "linux-aarch64", "osx-arm64", ...
    glibc: str  # "" when not glibc
    packages: dict[str, str] = field(default_factory=dict)  # normalised name -> version
    package_builds: dict[str, str] = field(default_factory=dict)  # conda build strings
    package_source: str = ""  # "conda-meta" or "importlib.metadata"
    env: dict[str, str] = field(default_factory=dict)  # CUDA_VISIBLE_DEVICES, UCX_*, NCCL_*...
    nvml_error: str = ""  # why NVML facts are missing ("" when NVML answered)
    driver_version: str = ""  # "580.159.04"
    cuda_driver_version: str = ""  # "13.0": the newest CUDA the driver supports
    gpus: tuple[Gpu, ...] = ()  # every GPU NVML sees
    visible_gpu_uuids: tuple[str, ...] = ()  # what CUDA_VISIBLE_DEVICES leaves, in order
    ucx: UcxFacts = field(default_factory=UcxFacts)
    nccl_version: str = ""
    resources: dict[str, float] = field(default_factory=dict)  # Dask worker resources
    collect_seconds: float = 0.0
    # Added after the first schema; all optional so older dicts still load.
    cuda_device_order: str = ""  # CUDA_DEVICE_ORDER ("" = CUDA's default FASTEST_FIRST)
    visible_devices_problem: str = ""  # why CUDA_VISIBLE_DEVICES hides GPUs ("" when fine)
    own_pids: tuple[int, ...] = ()  # this process and its descendants (not foreign on a GPU)
    python_packages: dict[str, str] = field(default_factory=dict)  # dist-info on sys.path
    imports: tuple[ImportProbe, ...] = ()  # only the modules asked for
    libraries: tuple[LibraryProbe, ...] = ()  # only the libraries asked for
    nccl_source: str = ""  # path of the libnccl that answered, or "torch"
    # Health facts (issue 12): NVML per GPU and the host's limits, links and kernel log.
    gpu_health: tuple[GpuHealth, ...] = ()
    host_health: HostHealth = field(default_factory=HostHealth)
    # The same GPU reads again after verify node --level 2's load (PCIe link as trained under
    # load, the highest seen during it; error counters after it): () when no load ran.
    gpu_health_after: tuple[GpuHealth, ...] = ()
    # What Slurm told the process (Slurm checks): SLURM_*, SLURMD_NODENAME, GPU_DEVICE_ORDINAL
    slurm: dict[str, str] = field(default_factory=dict)
    # The interface under a worker's Dask address and its link speed (--bench references
    # between hosts): empty for other roles.
    address_link: AddressLink = field(default_factory=AddressLink)


# --------------------------------------------------------------------------------------------
# Collection. Everything below reads the machine; nothing raises for a missing driver, library
# or package: what could not be read is recorded as a reason string instead.

# Environment variables that change what a GPU job sees; always recorded when set.
ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH", "CONDA_PREFIX")
ENV_PREFIXES = ("UCX_", "NCCL_", "DASK_DISTRIBUTED__COMM", "OMP_NUM_THREADS")

# What CUDA reads for "no device at all" (set by SLURM/containers when no GPU was granted).
_NO_DEVICE_VALUES = ("", "-1", "NoDevFiles", "none")


def collect_node_facts(
    role: str = "local",
    address: str = "",
    *,
    extra_env: tuple[str, ...] | list[str] = (),
    import_modules: tuple[str, ...] | list[str] = (),
    libraries: tuple[str, ...] | list[str] = (),
    probe_timeout: float = 60.0,
    ucx_info_timeout: float = 10.0,
    health: bool | None = None,
    kernel_log: str = "",
) -> NodeFacts:
    """Gather this process's view of its machine; never raises for missing hardware.

    health: also read the GPUs' and the host's health (ECC, PCIe, NVLink, clocks, limits,
    links, Xid events; see collect_gpu_health, collect_host_health). None (the default): for
    the processes that run jobs and whose health is judged, "local" (verify node) and
    "worker"; not for a cluster's client and scheduler, which share the busy event loop of
    the caller. kernel_log: a file to read Xid lines from instead of the kernel's own log.
    """
    t0 = time.perf_counter()
    # One stat per directory per collection: every stat releases the GIL, and taking it back
    # behind a busy event loop thread (a client's, a scheduler's) costs tens of microseconds.
    _STAT_MEMO[threading.get_ident()] = {}
    try:
        env = _interesting_env(extra_env)
        python_packages = _dist_info_packages(sys.path)
        meta = os.path.join(sys.prefix, "conda-meta")
        conda = _cached(
            "conda-meta", dirs_key([meta]), lambda: _conda_meta_packages(Path(sys.prefix))
        )
        if conda is not None:
            packages, builds, source = conda[0], conda[1], "conda-meta"
        else:
            # The same dict object for both fields: pickle and facts_to_dict then send it once.
            packages, builds, source = python_packages, {}, "importlib.metadata"
        nvml_error, driver, cuda_driver, gpus = _nvml_facts()
        visible, problem = resolve_visible_devices(env.get("CUDA_VISIBLE_DEVICES"), gpus)
        own: tuple[int, ...] = (os.getpid(),)
        if any(g.processes for g in gpus):  # walking /proc costs ms: only when it can matter
            own = _own_pids(os.getpid())
        nccl_version, nccl_source = _nccl_version()
        gpu_health: tuple[GpuHealth, ...] = ()
        host_health = HostHealth()
        if health or (health is None and role in ("local", "worker")):
            # verify node judges every GPU of the node; a worker the GPUs it is given (with
            # ~100 NVML calls per GPU, eight workers reading all eight GPUs of their host
            # would read each GPU eight times a round)
            by_uuid = {g.uuid: g.index for g in gpus}
            mine = [g.index for g in gpus] if role != "worker" else [
                by_uuid[u] for u in visible if u in by_uuid
            ]
            gpu_health = collect_gpu_health(mine) if mine else ()
            # dmesg / journalctl fallbacks cost ms to seconds: verify node only, not workers
            host_health = collect_host_health(kernel_log, log_fallbacks=role == "local")
        facts = NodeFacts(
            host=socket.gethostname(),
            pid=os.getpid(),
            user=_current_user(),
            role=role,
            address=address,
            python=_process_constant("python", platform.python_version),
            python_executable=sys.executable,
            platform=_process_constant("platform", conda_platform),
            glibc=_process_constant("glibc", glibc_version),
            packages=packages,
            package_builds=builds,
            package_source=source,
            env=env,
            nvml_error=nvml_error,
            driver_version=driver,
            cuda_driver_version=cuda_driver,
            gpus=gpus,
            visible_gpu_uuids=visible,
            ucx=_ucx_facts(python_packages, packages, ucx_info_timeout),
            nccl_version=nccl_version,
            cuda_device_order=env.get("CUDA_DEVICE_ORDER", ""),
            visible_devices_problem=problem,
            own_pids=own,
            python_packages=python_packages,
            imports=probe_imports(import_modules, probe_timeout) if import_modules else (),
            libraries=probe_libraries(libraries, probe_timeout) if libraries else (),
            nccl_source=nccl_source,
            gpu_health=gpu_health,
            host_health=host_health,
            slurm=slurm_env(),
            address_link=address_link(address) if role == "worker" else AddressLink(),
        )
        return dataclasses.replace(facts, collect_seconds=time.perf_counter() - t0)
    finally:
        _STAT_MEMO.pop(threading.get_ident(), None)


# ---- per-process caches --------------------------------------------------------------------
# A worker answers many rounds in its life, and most of what a round reads from the file system
# changes only when a directory's entries change: pip and conda install, upgrade and uninstall
# add, rename or remove entries of site-packages / conda-meta, which moves the directory's
# mtime. So those scans are kept, keyed on the directories' (mtime, inode): a stat per sys.path
# entry (microseconds) instead of listing and parsing them (0.6 ms for 97 distributions).
# Live state (GPU memory and processes, the environment, NVLink and PCIe link state) is never
# kept. Every cached value is copied out, so callers may not corrupt it.

_CACHE: dict[str, tuple[Any, Any]] = {}

# A directory changed twice within one timestamp tick keeps one mtime (the "racy git"
# problem): a scan of a directory modified this recently is used once, not kept. Linux file
# systems stamp with the kernel's coarse clock (one tick, at most 10 ms); 100 ms leaves a
# margin. Not longer: Dask creates its scratch directories (on sys.path) as a cluster starts.
_RACY_NS = 100_000_000


# thread id -> {path: os.stat result or None}, during one collection by that thread. A plain
# dict, not threading.local: cloudpickle must be able to ship this module by value.
_STAT_MEMO: dict[int, dict[str, Any]] = {}


def dirs_key(dirs: list[str]) -> tuple[tuple[str, int, int], ...] | None:
    """(dir, mtime_ns, inode) for each entry; None (do not cache) when one just changed."""
    out = []
    now = time.time_ns()
    memo = _STAT_MEMO.get(threading.get_ident())
    for d in dirs:
        path = d or "."
        if memo is not None and path in memo:
            st = memo[path]
        else:
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if memo is not None:
                memo[path] = st
        if st is None:
            out.append((d, -1, -1))
            continue
        if now - st.st_mtime_ns < _RACY_NS:
            return None
        out.append((d, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _cached(name: str, key: Any, compute: Any) -> Any:
    """compute() once per key; a copy of the value every time (dicts and tuples of dicts)."""
    hit = _CACHE.get(name)
    if key is not None and hit is not None and hit[0] == key:
        value = hit[1]
    else:
        value = compute()
        if key is not None:
            _CACHE[name] = (key, value)
        else:
            _CACHE.pop(name, None)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, tuple):
        return tuple(dict(v) if isinstance(v, dict) else v for v in value)
    return value


def _process_constant(name: str, read: Any) -> Any:
    """What is fixed for the life of a process (its interpreter, its mapped libc): read once."""
    key = f"constant:{name}"
    if key not in _CACHE:
        _CACHE[key] = read()
    return _CACHE[key]


def _current_user() -> str:
    # getpass reads these variables, then the passwd database (0.2 ms through NSS): kept per
    # uid and variables, which is everything its answer depends on.
    names = ("LOGNAME", "USER", "LNAME", "USERNAME")
    key = (os.getuid() if hasattr(os, "getuid") else -1, *(os.environ.get(n) for n in names))
    return _cached("user", key, _read_user)


def _read_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry for this uid (containers): the uid still says who
        return str(os.getuid()) if hasattr(os, "getuid") else ""


def _interesting_env(extra: tuple[str, ...] | list[str]) -> dict[str, str]:
    out = {}
    for k, v in os.environ.items():
        if k in ENV_NAMES or k in extra or k.startswith(ENV_PREFIXES):
            out[k] = v
    return out


def conda_platform() -> str:
    """This interpreter's conda subdir ("linux-64", "osx-arm64", ...)."""
    machine = platform.machine().lower()
    arch = {"x86_64": "64", "amd64": "64", "aarch64": "aarch64", "arm64": "arm64"}.get(
        machine, machine
    )
    if sys.platform.startswith("linux"):
        return f"linux-{arch}"
    if sys.platform == "darwin":
        return f"osx-{arch}"
    if sys.platform == "win32":
        return f"win-{arch}"
    return f"{sys.platform}-{arch}"


def glibc_version() -> str:
    """'2.28' on glibc systems, '' elsewhere (musl, macOS)."""
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        value = ""
    if value.startswith("glibc "):
        return value.split()[1]
    lib, ver = platform.libc_ver()
    return ver if lib == "glibc" else ""


_SEPARATORS = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 name normalisation, also right for conda names (already lower-case, dashes)."""
    return _SEPARATORS.sub("-", name).lower()


def _conda_meta_packages(prefix: Path) -> tuple[dict[str, str], dict[str, str]] | None:
    """name -> version and name -> build from <prefix>/conda-meta; None when not a conda env.

    conda names each record `<name>-<version>-<build>.json`; version and build never contain
    '-', so the file name alone is enough. Reading the JSON (which lists every file of the
    package, megabytes for a RAPIDS env) would cost far more than the whole collection.
    """
    meta = prefix / "conda-meta"
    try:
        names = os.listdir(meta)
    except OSError:
        return None
    versions: dict[str, str] = {}
    builds: dict[str, str] = {}
    for fname in names:
        if not fname.endswith(".json"):
            continue  # "history", "pinned", ".lock"
        parts = fname[: -len(".json")].rsplit("-", 2)
        if len(parts) != 3:
            continue
        name = parts[0]  # conda names are canonical already ("_libgcc_mutex" stays)
        versions[name], builds[name] = parts[1], parts[2]
    return dict(sorted(versions.items())), dict(sorted(builds.items()))


_DIST_INFO = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+?)(?:-py[\d.]+)?\.(?:dist|egg)-info$")


def _dist_info_packages(path: list[str]) -> dict[str, str]:
    """Installed Python distributions, from the `*.dist-info` names on sys.path.

    The same directories importlib.metadata.distributions() finds, but read from their names
    (`<name>-<version>.dist-info`) instead of parsing every METADATA file: 0.6 ms instead of
    35 ms for 97 distributions, which matters when this runs on every worker. A name that does
    not parse falls back to importlib.metadata for that one distribution. First entry on
    sys.path wins, as for imports.
    """
    out: dict[str, str] = {}
    for entry in path:
        directory = os.path.abspath(entry or ".")
        # Per directory: Dask puts its scratch directories on sys.path, and they change all
        # the time; only they are listed again.
        for name, version in _cached(f"dist-info:{directory}", dirs_key([directory]),
                                     lambda d=directory: _dists_in(d)):
            out.setdefault(name, version)
    return dict(sorted(out.items()))


def _dists_in(directory: str) -> tuple[tuple[str, str], ...]:
    try:
        names = os.listdir(directory)
    except OSError:
        return ()
    found = []
    for fname in names:
        if not fname.endswith(("dist-info", "egg-info")):
            continue
        m = _DIST_INFO.match(fname)
        if m:
            found.append((normalize_name(m["name"]), m["version"]))
        else:
            meta = _metadata_of(os.path.join(directory, fname))
            if meta is not None:
                found.append(meta)
    return tuple(found)


def _metadata_of(path: str) -> tuple[str, str] | None:
    import importlib.metadata

    try:
        dist = importlib.metadata.PathDistribution(Path(path))
        name = dist.metadata["Name"]
        return (normalize_name(name), dist.version) if name else None
    except Exception:
        return None


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


def _nvml_facts() -> tuple[str, str, str, tuple[Gpu, ...]]:
    """(nvml_error, driver version, CUDA driver version, GPUs)."""
    # The import (with its warnings filter) costs more than the rest of a GPU-less collection;
    # its outcome changes only when sys.path's directories do (pynvml installed or removed).
    nv = _cached("pynvml", dirs_key(sys.path), _try_pynvml)
    if isinstance(nv, str):
        return (nv, "", "", ())
    try:
        # NVML stays initialised for the life of the process (it is reference counted and
        # released at exit): re-initialising costs far more than the rest of a collection.
        nv.nvmlDeviceGetCount()
    except nv.NVMLError_Uninitialized:
        try:
            nv.nvmlInit()
        except nv.NVMLError as e:
            return (f"NVML did not start: {e}", "", "", ())
    except nv.NVMLError as e:
        return (f"NVML did not answer: {e}", "", "", ())
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
        return (f"NVML failed while reading GPUs: {e}", "", "", ())
    if not gpus:
        return ("NVML answered but found no GPU", driver, cuda_text, ())
    return ("", driver, cuda_text, gpus)


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
    return tuple(
        GpuProcess(pid=pid, used_mib=mib, user=_pid_user(pid)) for pid, mib in used.items()
    )


def _pid_user(pid: int) -> str:
    """The owner of pid from /proc/<pid>/status; '' when another pid namespace hides it."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    uid = int(line.split()[1])
                    break
            else:
                return ""
    except (OSError, ValueError):
        return ""
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _own_pids(root: int) -> tuple[int, ...]:
    """root and all its descendants, from /proc/<pid>/stat parent links."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return (root,)
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name in (...) may contain spaces and parentheses: split after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return tuple(sorted(out))


def resolve_visible_devices(
    value: str | None, gpus: tuple[Gpu, ...]
) -> tuple[tuple[str, ...], str]:
    """The GPU UUIDs CUDA will expose for a CUDA_VISIBLE_DEVICES value, and why any are lost.

    Mirrors the CUDA runtime: entries are indices or (prefixes of) UUIDs; parsing stops at the
    first entry that names no GPU, dropping it and all after it; a GPU named twice makes CUDA
    expose no GPU at all (on 2x H200, CUDA_VISIBLE_DEVICES=0,0 left torch with 0 GPUs).
    Indices are taken in PCI bus order (NVML's order), which is what CUDA uses with
    CUDA_DEVICE_ORDER=PCI_BUS_ID and, on a node of identical GPUs, also by default.
    """
    if value is None:
        return tuple(g.uuid for g in gpus), ""
    if value.strip() in _NO_DEVICE_VALUES:
        return (), f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU"
    chosen: list[str] = []
    tokens = value.split(",")
    for pos, raw in enumerate(tokens):
        token = raw.strip()
        uuid, why = _match_device(token, gpus)
        if not uuid:
            dropped = "it" if pos == len(tokens) - 1 else "it and every entry after it"
            return tuple(chosen), f"entry {token!r} {why}: CUDA ignores {dropped}"
        if uuid in chosen:
            return (), f"entry {token!r} names a GPU already listed: CUDA then exposes no GPU"
        chosen.append(uuid)
    return tuple(chosen), ""


def _match_device(token: str, gpus: tuple[Gpu, ...]) -> tuple[str, str]:
    if token.isdigit():
        i = int(token)
        if i < len(gpus):
            return gpus[i].uuid, ""
        have = f"GPUs 0-{len(gpus) - 1}" if gpus else "no GPU"
        return "", f"is not a GPU index (this node has {have})"
    if token.startswith("MIG-"):
        # MIG instances are not enumerated here; trust the token rather than drop it
        return token, ""
    if token.startswith("GPU-"):
        hits = [g.uuid for g in gpus if g.uuid.startswith(token)]
        if len(hits) == 1:
            return hits[0], ""
        return "", "matches no GPU UUID" if not hits else f"matches {len(hits)} GPU UUIDs"
    return "", "is neither an index nor a GPU-/MIG- UUID"


# ---- UCX and NCCL ---------------------------------------------------------------------------

_UCX_MODULES = (("ucxx", ("ucxx",)), ("ucp", ("ucx-py",)))
_UCX_LIB_PACKAGES = ("libucx", "ucx")  # pip wheel libucx-cuXX, conda package ucx


def _by_prefix(packages: dict[str, str], stems: tuple[str, ...]) -> str:
    """Version of the first package named stem or stem-cuXX (RAPIDS wheels carry a suffix)."""
    for name, version in packages.items():
        for stem in stems:
            if name == stem or (
                name.startswith(stem) and name[len(stem) : len(stem) + 3] == "-cu"
                and name[len(stem) + 3 :].isdigit()
            ):
                return version
    return ""


def _ucx_facts(
    python_packages: dict[str, str], packages: dict[str, str], timeout: float
) -> UcxFacts:
    """Which UCX Python binding is installed, the UCX version and its transports.

    The binding is found with find_spec, not imported: importing ucxx loads libucx and CUDA
    into the caller (a Dask worker), and takes seconds. Whether it really imports is the
    "imports" probe's job (a child process). Transports come from `ucx_info -d`.
    """
    module = module_version = ""
    allpkgs = {**packages, **python_packages}
    # Where the bindings and the libucx wheel are depends on sys.path's directories (a new
    # package is a new entry in one) and on the import machinery: cached on both.
    key = dirs_key(sys.path)
    if key is not None:
        key = (key, tuple(map(id, sys.meta_path)), *(m in sys.modules for m, _ in _UCX_MODULES))
    found, wheel_version = _cached("ucx-lookup", key, _ucx_lookup)
    for mod, dists in _UCX_MODULES:
        if mod == found:
            module, module_version = mod, _by_prefix(allpkgs, dists)
    ucx_version = _by_prefix(allpkgs, _UCX_LIB_PACKAGES) or wheel_version
    cmd = _ucx_info_command()
    if cmd is None:
        error = "" if not module else "ucx_info not found (PATH, <prefix>/bin, libucx wheel)"
        return UcxFacts(module, module_version, ucx_version, (), error)
    exe, env = cmd
    try:
        out = subprocess.run(
            [exe, "-v", "-d"], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return UcxFacts(module, module_version, ucx_version, (), f"ucx_info timed out ({exe})")
    except OSError as e:
        return UcxFacts(module, module_version, ucx_version, (), f"ucx_info failed: {e}")
    transports, version = parse_ucx_info(out.stdout)
    error = "" if out.returncode == 0 else f"ucx_info exited {out.returncode}: {_tail(out.stderr)}"
    return UcxFacts(module, module_version, version or ucx_version, transports, error)


def _ucx_lookup() -> tuple[str, str]:
    """(the first UCX binding find_spec finds or "", the libucx wheel's UCX version or "")."""
    import importlib.util

    for mod, _ in _UCX_MODULES:
        try:
            if importlib.util.find_spec(mod) is not None:
                return mod, _libucx_wheel_version()
        except (ImportError, ValueError):
            continue
    return "", _libucx_wheel_version()


def parse_ucx_info(text: str) -> tuple[tuple[str, ...], str]:
    """(sorted transports, UCX version) from `ucx_info -v -d` output."""
    transports = sorted(set(re.findall(r"^#\s*Transport:\s*(\S+)", text, re.M)))
    m = re.search(r"^#\s*(?:Library|UCT) version:\s*(\S+)", text, re.M)
    return tuple(transports), (m[1] if m else "")


def _libucx_wheel_version() -> str:
    """UCX version bundled in RAPIDS' libucx wheel (libucx/UCX_VERSION.txt), '' without it."""
    for base in _site_dirs():
        try:
            with open(os.path.join(base, "libucx", "UCX_VERSION.txt")) as f:
                return f.read().strip()
        except OSError:
            continue
    return ""


def _ucx_info_command() -> tuple[str, dict[str, str] | None] | None:
    exe = shutil.which("ucx_info") or shutil.which("ucx_info", path=os.path.join(sys.prefix, "bin"))
    if exe:
        return exe, None
    # the libucx wheel ships bin/ucx_info next to lib/, without an rpath to it
    for base in _site_dirs():
        cand = os.path.join(base, "libucx", "bin", "ucx_info")
        if os.access(cand, os.X_OK):
            env = dict(os.environ)
            lib = os.path.join(base, "libucx", "lib")
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (lib, env.get("LD_LIBRARY_PATH", "")) if p
            )
            return cand, env
    return None


def _site_dirs() -> list[str]:
    # every import root, not only '*-packages': `pip install --target DIR` + PYTHONPATH (as on
    # the GPU machines this was run on) puts the libucx / nvidia-nccl wheels elsewhere
    return [p for p in sys.path if p and not p.endswith(".zip")]


def slurm_env() -> dict[str, str]:
    """What Slurm told this process: SLURM_* (job, step, node, GPUs) and GPU_DEVICE_ORDINAL."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("SLURM_", "SLURMD_")) or k == "GPU_DEVICE_ORDINAL"
    }


def _nccl_version() -> tuple[str, str]:
    """NCCL's version: torch's when torch is already imported, else libnccl through ctypes."""
    torch = sys.modules.get("torch")
    if torch is not None:  # never import torch here: it costs seconds in every worker
        try:
            v = torch.cuda.nccl.version()
            return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v), "torch"
        except Exception:
            pass
    if "nccl" in _CACHE:  # a library once loaded stays mapped: its version cannot change
        return _CACHE["nccl"]
    candidates = [
        os.path.join(base, "nvidia", "nccl", "lib", "libnccl.so.2") for base in _site_dirs()
    ]
    candidates.append(os.path.join(sys.prefix, "lib", "libnccl.so.2"))
    candidates.append("libnccl.so.2")  # the loader's own search (LD_LIBRARY_PATH, ldconfig)
    for cand in candidates:
        if os.sep in cand and not os.path.exists(cand):
            continue
        try:
            lib = ctypes.CDLL(cand)
            out = ctypes.c_int(0)
            if lib.ncclGetVersion(ctypes.byref(out)) != 0:
                continue
        except (OSError, AttributeError):
            continue
        _CACHE["nccl"] = (decode_nccl_version(out.value), cand)
        return _CACHE["nccl"]
    return "", ""


def decode_nccl_version(code: int) -> str:
    """ncclGetVersion's integer: major*10000+minor*100+patch since 2.9, major*1000+... before."""
    if code >= 10000:
        return f"{code // 10000}.{(code % 10000) // 100}.{code % 100}"
    return f"{code // 1000}.{(code % 1000) // 100}.{code % 100}"


def _tail(text: str, limit: int = 300) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:limit]


# ---- probes in child processes --------------------------------------------------------------

# Run by `python -c`: imports each module named in argv, one JSON line per step, flushed, so
# the parent knows which import hung or killed the interpreter.
_IMPORT_CHILD = """
import importlib, json, sys, time, traceback
for name in sys.argv[1:]:
    print(json.dumps({"start": name}), flush=True)
    t = time.perf_counter()
    try:
        importlib.import_module(name)
        err = ""
    except BaseException as e:
        lines = traceback.format_exception_only(type(e), e)
        err = (lines[-1].strip() if lines else type(e).__name__)[:500]
    print(json.dumps({"module": name, "error": err, "s": time.perf_counter() - t}), flush=True)
"""


def probe_imports(
    modules: tuple[str, ...] | list[str], timeout: float = 60.0, python: str = ""
) -> tuple[ImportProbe, ...]:
    """Import each module in a fresh interpreter of this environment, each within `timeout` s.

    A fresh process is what a job gets: a module that imports here only because the caller
    already loaded some library would pass wrongly in-process. One child runs them all; when
    an import hangs or crashes the child, that module is reported and a new child goes on
    with the rest.
    """
    results: dict[str, ImportProbe] = {}
    todo = list(dict.fromkeys(modules))
    while todo:
        done = _import_child(todo, timeout, python or sys.executable)
        results.update({p.module: p for p in done})
        todo = [m for m in todo if m not in results]
    return tuple(results[m] for m in dict.fromkeys(modules))


def _import_child(modules: list[str], timeout: float, python: str) -> list[ImportProbe]:
    try:
        proc = subprocess.Popen(
            [python, "-c", _IMPORT_CHILD, *modules],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            # its own process group, killed whole on every way out (an import may start
            # processes of its own); a terminal's Ctrl-C reaches only the caller, which ends it
            start_new_session=True,
        )
    except OSError as e:
        return [ImportProbe(m, False, 0.0, f"could not start {python}: {e}") for m in modules]
    try:
        return _read_import_child(proc, modules, timeout, python)
    finally:  # done, timed out, or interrupted (KeyboardInterrupt, SIGTERM): nothing stays
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone, or not allowed: the child itself at least
        with contextlib.suppress(OSError):
            proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)


def _read_import_child(
    proc: subprocess.Popen, modules: list[str], timeout: float, python: str
) -> list[ImportProbe]:
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None  # Popen(stdout=PIPE) always sets it
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    out: list[ImportProbe] = []
    current, started = "", time.perf_counter()
    while True:
        wait = timeout if not current else max(0.0, timeout - (time.perf_counter() - started))
        try:
            line = lines.get(timeout=wait)
        except queue.Empty:
            proc.kill()
            proc.wait()
            name = current or modules[len(out)]
            out.append(ImportProbe(name, False, timeout, f"timed out after {timeout:g} s"))
            return out
        if line is None:  # the child exited
            rc = proc.wait()
            if current:
                why = f"crashed the interpreter (signal {-rc})" if rc < 0 else f"exit {rc}"
                out.append(
                    ImportProbe(current, False, time.perf_counter() - started, f"import {why}")
                )
            elif len(out) < len(modules):  # died before the first step: bad interpreter
                out.extend(
                    ImportProbe(m, False, 0.0, f"{python} exited {rc} before importing")
                    for m in modules[len(out) :]
                )
            return out
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # a module printed to stdout while importing
        if "start" in msg:
            current, started = msg["start"], time.perf_counter()
        elif "module" in msg:
            out.append(ImportProbe(msg["module"], not msg["error"], msg["s"], msg["error"]))
            current = ""


# Well-known sonames, so `--library nccl` means what people mean.
SONAMES = {
    "cuda": "libcuda.so.1",
    "nccl": "libnccl.so.2",
    "openblas": "libopenblas.so.0",
    "cudart": "libcudart.so",
    "nvidia-ml": "libnvidia-ml.so.1",
    "ucp": "libucp.so.0",
    "gomp": "libgomp.so.1",
}

_LIBRARY_CHILD = """
import ctypes, ctypes.util, json, sys
for name in sys.argv[1:]:
    try:
        ctypes.CDLL(name)
        err = ""
    except OSError as e:
        err = str(e)[:300]
        # "libfoo.so" is often only in the -dev package: ask ldconfig for the runtime soname
        stem = name[3:-3] if name.startswith("lib") and name.endswith(".so") else ""
        found = ctypes.util.find_library(stem) if stem else None
        if found:
            try:
                ctypes.CDLL(found)
                err = ""
            except OSError as e2:
                err = str(e2)[:300]
    if err and "/" not in name:
        # conda's lib/ and pip wheels' nvidia/*/lib hold libraries that frameworks load by
        # path (torch preloads its NCCL so): found there, the library is usable by them
        import glob, os
        dirs = [os.path.join(sys.prefix, "lib")] + [
            d for p in sys.path if p.endswith("site-packages")
            for d in glob.glob(os.path.join(p, "nvidia", "*", "lib"))
        ]
        for cand in (os.path.join(d, name) for d in dirs):
            if os.path.exists(cand):
                try:
                    ctypes.CDLL(cand)
                    err = ""
                    break
                except OSError as e3:
                    err = str(e3)[:300]
    print(json.dumps({"name": name, "error": err}), flush=True)
with open("/proc/self/maps") as f:
    print(json.dumps({"maps": sorted({ln.split()[-1] for ln in f if "/" in ln})}), flush=True)
"""


def probe_libraries(
    names: tuple[str, ...] | list[str], timeout: float = 60.0, python: str = ""
) -> tuple[LibraryProbe, ...]:
    """dlopen each library in a child of this interpreter (its rpath and LD_LIBRARY_PATH).

    A child keeps the libraries out of the caller; the mapped path says which copy won.
    """
    wanted = list(dict.fromkeys(names))
    sonames = [
        SONAMES.get(n[3:] if n.startswith("lib") else n, n) if ".so" not in n else n
        for n in wanted
    ]
    sonames = [s if ".so" in s or "/" in s else f"lib{s}.so" for s in sonames]
    try:
        proc = subprocess.run(
            [python or sys.executable, "-c", _LIBRARY_CHILD, *sonames],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return tuple(
            LibraryProbe(n, False, "", f"probe timed out after {timeout:g} s") for n in wanted
        )
    except OSError as e:
        return tuple(LibraryProbe(n, False, "", f"probe did not start: {e}") for n in wanted)
    errors: dict[str, str] = {}
    maps: list[str] = []
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "maps" in msg:
            maps = msg["maps"]
        else:
            errors[msg["name"]] = msg["error"]
    out = []
    for name, so in zip(wanted, sonames):
        if so not in errors:
            why = f"probe exited {proc.returncode} before {so}: {_tail(proc.stderr)}"
            out.append(LibraryProbe(name, False, "", why))
        elif errors[so]:
            out.append(LibraryProbe(name, False, "", errors[so]))
        else:
            base = os.path.basename(so).split(".so")[0] + ".so"
            path = next((m for m in maps if os.path.basename(m).startswith(base)), so)
            out.append(LibraryProbe(name, True, path, ""))
    return tuple(out)


# ---- health: NVML per GPU, host limits, links, kernel log (issue 12) ------------------------

# Kernel modules whose presence a check asks about (/sys/module/<name>).
KERNEL_MODULES = ("nvidia", "nvidia_uvm", "nvidia_peermem", "nv_peer_mem", "gdrdrv", "ib_core")

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

    d: dict[str, Any] = {"index": index}
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
        total = fn("nvmlDeviceGetTotalEccErrors")
        # nvml.h's values, should a pynvml lack the names
        unc = getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        cor = getattr(nv, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        vol, agg = getattr(nv, "NVML_VOLATILE_ECC", 0), getattr(nv, "NVML_AGGREGATE_ECC", 1)
        d["ecc_uncorrected_volatile"] = read("ecc_uncorrected_volatile", total, unc, vol)
        d["ecc_uncorrected_aggregate"] = read("ecc_uncorrected_aggregate", total, unc, agg)
        d["ecc_corrected_volatile"] = read("ecc_corrected_volatile", total, cor, vol)
        d["ecc_corrected_aggregate"] = read("ecc_corrected_aggregate", total, cor, agg)
        # Page retirement (before Ampere) and row remapping (Ampere on): each GPU supports one
        pages = fn("nvmlDeviceGetRetiredPages_v2") if hasattr(nv, "nvmlDeviceGetRetiredPages_v2") \
            else fn("nvmlDeviceGetRetiredPages")
        sbe = read("retired_pages_sbe", pages, 0)  # MULTIPLE_SINGLE_BIT_ECC_ERRORS
        dbe = read("retired_pages_dbe", pages, 1)  # DOUBLE_BIT_ECC_ERROR
        d["retired_pages_sbe"] = len(sbe) if sbe is not None else None
        d["retired_pages_dbe"] = len(dbe) if dbe is not None else None
        pending = read("retired_pages_pending", fn("nvmlDeviceGetRetiredPagesPendingStatus"))
        d["retired_pages_pending"] = bool(pending) if pending is not None else None
        rows = read("remapped_rows", fn("nvmlDeviceGetRemappedRows"))
        if rows is not None:
            d["remapped_rows_correctable"], d["remapped_rows_uncorrectable"] = rows[0], rows[1]
            d["row_remap_pending"], d["row_remap_failed"] = bool(rows[2]), bool(rows[3])
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
    d["unsupported"] = tuple(unsupported)
    d["errors"] = tuple(errors)
    return GpuHealth(**d)


_NVLINK_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))


def _nvlinks(nv: Any, h: Any, unsupported: list[str], errors: list[str]) -> tuple[NvLink, ...]:
    links = []
    counters_unsupported = False
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            up = nv.nvmlDeviceGetNvLinkState(h, link) == getattr(nv, "NVML_FEATURE_ENABLED", 1)
        except nv.NVMLError as e:
            if link == 0 and getattr(e, "value", None) in _NVML_UNSUPPORTED:
                unsupported.append("nvlink")  # no NVLink on this GPU: stop asking
                return ()
            continue  # InvalidArgument: past this GPU's last link
        counts: dict[str, int | None] = {}
        for name, code in _NVLINK_COUNTERS:
            value = None
            if up and not counters_unsupported:
                try:
                    value = int(nv.nvmlDeviceGetNvLinkErrorCounter(h, link, code))
                except nv.NVMLError as e:
                    if getattr(e, "value", None) in _NVML_UNSUPPORTED:
                        counters_unsupported = True  # the same for every link of this GPU
                    else:
                        errors.append(f"nvlink {link} {name}: {e}")
            counts[name] = value
        links.append(NvLink(link, up, **counts))
    if counters_unsupported:
        unsupported.append("nvlink_error_counters")
    return tuple(links)


# Variables that name network interfaces or HCAs: /sys/class/net is read only when one is
# set (reading it costs ~50 us per interface, and nothing else judges interfaces).
NET_VARIABLES = ("NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES", "NCCL_IB_HCA")


def collect_host_health(kernel_log: str = "", log_fallbacks: bool = True) -> HostHealth:
    """Limits of this process, /dev/shm, network and InfiniBand ports, modules, Xid events.

    Network interfaces are read only when NCCL_SOCKET_IFNAME, UCX_NET_DEVICES or NCCL_IB_HCA
    is set; modules other than nvidia only on hosts with an RDMA device; the kernel log (and
    uptime) only where the NVIDIA driver is loaded. kernel_log: "" looks for Xid lines in
    /dev/kmsg, else `dmesg`, else `journalctl -k`; a path reads that file (or device).
    """
    memlock = _rlimit("RLIMIT_MEMLOCK")
    nofile = _rlimit("RLIMIT_NOFILE")
    shm_bytes = shm_free = None
    shm_error = ""
    try:
        st = os.statvfs("/dev/shm")
        shm_bytes, shm_free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    except OSError as e:
        shm_error = f"/dev/shm: {e.strerror or e}"
    ib_ports, ib_error = read_ib_ports()
    wanted = KERNEL_MODULES if ib_ports else ("nvidia",)
    modules = tuple(m for m in wanted if os.path.isdir(f"/sys/module/{m}"))
    uptime = -1.0
    if kernel_log or "nvidia" in modules:
        events, source, error, lines = read_kernel_log(kernel_log, log_fallbacks)
        uptime = _uptime()
    else:
        events, source, lines = (), "", 0
        error = "no NVIDIA kernel driver loaded (/sys/module/nvidia absent): no Xid to look for"
    nets = read_net_interfaces() if any(v in os.environ for v in NET_VARIABLES) else ()
    return HostHealth(
        collected=True,
        memlock_soft=memlock[0],
        memlock_hard=memlock[1],
        nofile_soft=nofile[0],
        nofile_hard=nofile[1],
        shm_bytes=shm_bytes,
        shm_free_bytes=shm_free,
        shm_error=shm_error,
        net_interfaces=nets,
        ib_ports=ib_ports,
        ib_error=ib_error,
        modules=modules,
        kernel_log_source=source,
        kernel_log_error=error,
        kernel_log_lines=lines,
        xid_events=events,
        uptime_seconds=uptime,
    )


def _rlimit(name: str) -> tuple[int | None, int | None]:
    try:
        import resource

        soft, hard = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, ValueError, OSError):
        return None, None
    inf = resource.RLIM_INFINITY
    return (-1 if soft == inf else soft), (-1 if hard == inf else hard)


def _uptime() -> float:
    try:
        with open("/proc/uptime") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def _read_sys(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def read_net_interfaces(root: str = "/sys/class/net") -> tuple[NetInterface, ...]:
    """Every interface in /sys/class/net: name, IFF_UP, operstate."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return ()
    out = []
    for name in names:
        flags = _read_sys(os.path.join(root, name, "flags"))
        try:
            up = bool(int(flags, 16) & 0x1)  # IFF_UP
        except ValueError:
            up = False
        out.append(NetInterface(name, up, _read_sys(os.path.join(root, name, "operstate"))))
    return tuple(out)


def address_link(address: str, root: str = "/sys/class/net") -> AddressLink:
    """The interface holding the IP of a Dask address ("tcp://10.0.0.5:40123") and its speed.

    Which interface holds the IP is looked up once per address in a process's life (one
    rtnetlink dump, ~0.14 ms); the speed is link state and is read every time (one sysfs file:
    ~25 us a round of a worker collection of ~1.2 ms). Never raises: what is unknown says why.
    """
    hit = _CACHE.get("address-link")
    if hit is not None and hit[0] == address:
        ip, name, error = hit[1]
    else:
        ip, name, error = found = _interface_of(address)
        if not error.startswith(_UNREADABLE):  # a failed read is tried again next round
            _CACHE["address-link"] = (address, found)
    if not name:
        return AddressLink(ip, "", -1, error)
    speed = _read_small(os.path.join(root, name, "speed"))
    try:
        mbps = int(speed)
    except ValueError:
        mbps = -1
    if mbps <= 0:  # -1 (virtio, down links), or EINVAL (lo, bridges, dummy): unreadable
        why = f"{root}/{name}/speed: " + (speed if speed else "unreadable")
        return AddressLink(ip, name, -1, f"link speed unknown ({why})")
    return AddressLink(ip, name, mbps, "")


def _read_small(path: str) -> str:
    # os.read, not open(): 13 us against 28 us for a sysfs file read on every facts round
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        return os.read(fd, 64).decode(errors="replace").strip()
    except OSError:  # EINVAL: the driver has no speed to give (lo, bridges, dummy)
        return ""
    finally:
        os.close(fd)


def address_ip(address: str) -> str:
    """The host part of a Dask address, as an IP ("" when it has none, e.g. inproc://)."""
    scheme, sep, rest = address.partition("://")
    if not sep or scheme == "inproc":
        return ""
    host = rest[1:].partition("]")[0] if rest.startswith("[") else rest.rpartition(":")[0]
    host = host or rest
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:  # a host name: resolved once per process (this runs behind the address cache)
        return str(socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0])
    except (OSError, IndexError, UnicodeError):
        return ""


_UNREADABLE = "interfaces not readable"


def _interface_of(address: str) -> tuple[str, str, str]:
    """(ip, interface, why none) for a Dask address."""
    ip = address_ip(address)
    if not ip:
        return "", "", f"no IP in the address {address!r}"
    try:
        name = interface_holding(ip)
    # AttributeError: no socket.AF_NETLINK (not Linux)
    except (OSError, ValueError, AttributeError, struct.error) as e:
        return ip, "", f"{_UNREADABLE}: {e}"
    return ip, name, "" if name else f"no interface of this host holds {ip}"


# rtnetlink (linux/netlink.h, linux/rtnetlink.h, linux/if_addr.h)
_NLMSG_ERROR, _NLMSG_DONE, _RTM_NEWADDR, _RTM_GETADDR = 2, 3, 20, 22
_NLM_F_DUMP_REQUEST = 0x301  # NLM_F_REQUEST | NLM_F_DUMP
_IFA_ADDRESS, _IFA_LOCAL = 1, 2


def interface_holding(ip: str) -> str:
    """The interface (device, not label: "eth0" for eth0:1) that holds ``ip``; "" if none.

    One RTM_GETADDR dump over rtnetlink, as `ip addr` does: it lists every address, secondary
    ones too (SIOCGIFADDR shows only an interface's first IPv4 address). Linux only: OSError
    elsewhere.
    """
    want = ipaddress.ip_address(ip)
    family = socket.AF_INET if want.version == 4 else socket.AF_INET6
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as s:  # 0: NETLINK_ROUTE
        s.settimeout(2.0)
        s.bind((0, 0))
        # nlmsghdr (len, type, flags, seq, pid) + ifaddrmsg (family, prefixlen, flags, scope,
        # index)
        s.send(struct.pack("=LHHLLBBBBL", 24, _RTM_GETADDR, _NLM_F_DUMP_REQUEST, 1, 0,
                           family, 0, 0, 0, 0))
        while True:
            data = s.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                length, kind = struct.unpack_from("=LH", data, off)
                if kind == _NLMSG_DONE or length < 16:
                    return ""
                if kind == _NLMSG_ERROR:
                    raise OSError(f"rtnetlink error {struct.unpack_from('=i', data, off + 16)[0]}")
                if kind == _RTM_NEWADDR and length >= 24:
                    index = struct.unpack_from("=L", data, off + 20)[0]
                    attrs: dict[int, bytes] = {}
                    at = off + 24
                    while at + 4 <= off + length:
                        size, atype = struct.unpack_from("=HH", data, at)
                        if size < 4:
                            break
                        attrs[atype] = data[at + 4:at + size]
                        at += (size + 3) & ~3
                    # IFA_LOCAL is this host's end; IFA_ADDRESS the peer's on point-to-point
                    if attrs.get(_IFA_LOCAL, attrs.get(_IFA_ADDRESS)) == want.packed:
                        return socket.if_indextoname(index)
                off += (length + 3) & ~3
            if not data:
                return ""


def read_ib_ports(root: str = "/sys/class/infiniband") -> tuple[tuple[IbPort, ...], str]:
    """(ports, why none): state, physical state, rate and link layer of each HCA port."""
    try:
        devices = sorted(os.listdir(root))
    except FileNotFoundError:
        return (), f"{root} absent: no InfiniBand / RoCE driver"
    except OSError as e:
        return (), f"{root}: {e.strerror or e}"
    out = []
    for dev in devices:
        ports_dir = os.path.join(root, dev, "ports")
        try:
            ports = sorted(os.listdir(ports_dir), key=lambda p: int(p) if p.isdigit() else 0)
        except OSError:
            continue
        for port in ports:
            base = os.path.join(ports_dir, port)

            def value(name: str, base: str = base) -> str:
                # "4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp"
                text = _read_sys(os.path.join(base, name))
                return text.split(":", 1)[1].strip() if ":" in text else text

            out.append(
                IbPort(
                    dev,
                    int(port) if port.isdigit() else 0,
                    value("state"),
                    value("phys_state"),
                    _read_sys(os.path.join(base, "rate")),
                    _read_sys(os.path.join(base, "link_layer")),
                )
            )
    return tuple(out), "" if out else f"{root} lists no port"


# "NVRM: Xid (PCI:0000:3b:00): 79, pid=1122, GPU has fallen off the bus." in every form the
# kernel log takes: /dev/kmsg records ("4,1234,5678901,-;NVRM: ..."), dmesg and journalctl -k
# -o short-monotonic ("[ 5.678901] NVRM: ..."), syslog files ("Nov 23 ... kernel: NVRM: ...").
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+),?\s*(.*)")
_MONOTONIC = re.compile(r"\[\s*(\d+\.\d+)\]")
_KMSG = re.compile(r"^\d+,\d+,(\d+),[^;]*;")

# path -> [fd, events, records]: /dev/kmsg is read on, not again, by later collections (a
# long-running node has ~10k records; a round of a cluster reads only what is new).
_KMSG_STATE: dict[str, list[Any]] = {}


def parse_xid_line(line: str) -> XidEvent | None:
    """An XidEvent from one kernel log line in any of its formats, or None."""
    m = _XID.search(line)
    if not m:
        return None
    seconds = -1.0
    k = _KMSG.match(line)
    if k:
        seconds = int(k[1]) / 1e6
    else:
        t = _MONOTONIC.search(line[: m.start()])
        if t:
            seconds = float(t[1])
    return XidEvent(int(m[2]), m[1].lower(), seconds, m[3].strip()[:200])


def read_kernel_log(
    path: str = "", fallbacks: bool = True
) -> tuple[tuple[XidEvent, ...], str, str, int]:
    """(Xid events, source, why unreadable, lines scanned) from `path` or the first source of
    /dev/kmsg, `dmesg`, `journalctl -k -b` that this user may read.

    fallbacks=False reads /dev/kmsg only: the two commands cost 5 ms to over a second per
    call (journalctl), too much for every worker in every round of a cluster.
    """
    if path:
        return _read_log_path(path)
    events, source, error, lines = _read_log_path("/dev/kmsg")
    if not error:
        return events, source, error, lines
    if not fallbacks:
        return (), "", f"{error} (dmesg and journalctl -k are tried by verify node only)", 0
    refused = _CACHE.get("kernel-log-refused")
    uid = os.getuid() if hasattr(os, "getuid") else -1
    if refused is not None and refused[0] == uid:
        # every source refused this user before: permissions do not change in a process's
        # life, and asking again costs two processes per collection on every worker
        return (), "", refused[1], 0
    why = [error]
    for cmd in (["dmesg"], ["journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            why.append(f"{cmd[0]}: {e}")
            continue
        if proc.returncode != 0:
            why.append(f"{cmd[0]}: {_tail(proc.stderr) or f'exit {proc.returncode}'}")
            continue
        text = proc.stdout.splitlines()
        if cmd[0] == "journalctl" and not any(_MONOTONIC.match(t) for t in text):
            # a user outside the systemd-journal / adm groups gets "-- No entries --", exit 0
            why.append("journalctl -k: no kernel entries visible to this user")
            continue
        found = tuple(e for e in map(parse_xid_line, text) if e is not None)
        return found, " ".join(cmd[:2]) if cmd[0] == "journalctl" else "dmesg", "", len(text)
    _CACHE["kernel-log-refused"] = (uid, "; ".join(why))
    return (), "", "; ".join(why), 0


def _read_log_path(path: str) -> tuple[tuple[XidEvent, ...], str, str, int]:
    import stat

    try:
        is_char = stat.S_ISCHR(os.stat(path).st_mode)
    except OSError as e:
        return (), path, f"{path}: {e.strerror or e}", 0
    if not is_char:  # a saved log: dmesg output, kern.log, journalctl -k
        try:
            with open(path, errors="replace") as f:
                text = f.read().splitlines()
        except OSError as e:
            return (), path, f"{path}: {e.strerror or e}", 0
        found = tuple(e for e in map(parse_xid_line, (t for t in text if "Xid" in t)) if e)
        return found, path, "", len(text)
    state = _KMSG_STATE.get(path)
    if state is None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            return (), path, f"{path}: {e.strerror or e}", 0
        state = _KMSG_STATE[path] = [fd, [], 0]
    fd, events, count = state
    while True:
        try:
            record = os.read(fd, 8192)
        except BlockingIOError:  # no record left
            break
        except BrokenPipeError:  # records were overwritten before we read them: go on
            continue
        except OSError as e:
            os.close(fd)
            del _KMSG_STATE[path]
            return tuple(events), path, f"{path}: {e.strerror or e}", count
        if not record:
            break
        count += 1
        line = record.decode("utf-8", "replace")
        if "Xid" in line:
            event = parse_xid_line(line)
            if event is not None:
                events.append(event)
    state[2] = count
    return tuple(events), path, "", count


# ---- plain data, for shipping facts between processes ---------------------------------------


def facts_to_dict(facts: NodeFacts) -> dict[str, Any]:
    """A JSON-able dict; facts_from_dict(facts_to_dict(f)) == f.

    Field by field rather than dataclasses.asdict, which deep-copies every value through a
    generic walk (0.31 ms against 0.12 ms here, on every process of every round). Dicts are
    copied (the caller may change them); a dict two fields share is copied once and stays
    shared, so pickle sends it once.
    """
    out = _shallow(facts)
    copies: dict[int, dict] = {}
    for name in ("packages", "package_builds", "env", "resources", "python_packages", "slurm"):
        value = out[name]
        if id(value) not in copies:
            copies[id(value)] = dict(value)
        out[name] = copies[id(value)]
    out["gpus"] = tuple(
        {**_shallow(g), "processes": tuple(_shallow(p) for p in g.processes)} for g in facts.gpus
    )
    out["ucx"] = _shallow(facts.ucx)
    out["imports"] = tuple(_shallow(p) for p in facts.imports)
    out["libraries"] = tuple(_shallow(p) for p in facts.libraries)
    for key in ("gpu_health", "gpu_health_after"):
        out[key] = tuple(
            {**_shallow(h), "nvlinks": tuple(_shallow(n) for n in h.nvlinks)}
            for h in getattr(facts, key)
        )
    hh = facts.host_health
    out["host_health"] = {
        **_shallow(hh),
        **{k: tuple(_shallow(x) for x in getattr(hh, k)) for k in _HOST_HEALTH_LISTS},
    }
    out["address_link"] = _shallow(facts.address_link)
    return out


# HostHealth fields that hold tuples of dataclasses, and their classes
_HOST_HEALTH_LISTS = {"net_interfaces": NetInterface, "ib_ports": IbPort, "xid_events": XidEvent}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _shallow(obj: Any) -> dict[str, Any]:
    # Every other field holds a str, number or tuple of them: immutable, shared as is.
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in dataclasses.fields(obj))
    return {n: getattr(obj, n) for n in names}


def facts_from_dict(data: dict[str, Any]) -> NodeFacts:
    """Rebuild NodeFacts from facts_to_dict output or its JSON; unknown keys are ignored."""
    d = _known(NodeFacts, data)
    d["gpus"] = tuple(_gpu_from_dict(g) for g in d.get("gpus", ()))
    d["visible_gpu_uuids"] = tuple(d.get("visible_gpu_uuids", ()))
    d["own_pids"] = tuple(int(p) for p in d.get("own_pids", ()))
    ucx = _known(UcxFacts, d.get("ucx") or {})
    ucx["transports"] = tuple(ucx.get("transports", ()))
    d["ucx"] = UcxFacts(**ucx)
    d["imports"] = tuple(ImportProbe(**_known(ImportProbe, p)) for p in d.get("imports", ()))
    d["libraries"] = tuple(LibraryProbe(**_known(LibraryProbe, p)) for p in d.get("libraries", ()))
    for key in ("gpu_health", "gpu_health_after"):
        d[key] = tuple(_gpu_health_from_dict(h) for h in d.get(key, ()))
    hh = _known(HostHealth, d.get("host_health") or {})
    for key, cls in _HOST_HEALTH_LISTS.items():
        hh[key] = tuple(cls(**_known(cls, x)) for x in hh.get(key, ()))
    hh["modules"] = tuple(hh.get("modules", ()))
    d["host_health"] = HostHealth(**hh)
    d["address_link"] = AddressLink(**_known(AddressLink, d.get("address_link") or {}))
    return NodeFacts(**d)


def _gpu_health_from_dict(h: dict[str, Any]) -> GpuHealth:
    d = _known(GpuHealth, h)
    d["nvlinks"] = tuple(NvLink(**_known(NvLink, n)) for n in d.get("nvlinks", ()))
    d["unsupported"] = tuple(d.get("unsupported", ()))
    d["errors"] = tuple(d.get("errors", ()))
    return GpuHealth(**d)


def _gpu_from_dict(g: dict[str, Any]) -> Gpu:
    d = _known(Gpu, g)
    d["compute_capability"] = tuple(d.get("compute_capability", (0, 0)))
    d["processes"] = tuple(GpuProcess(**_known(GpuProcess, p)) for p in d.get("processes", ()))
    return Gpu(**d)


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    # A newer collector on a worker may send fields this side does not know yet.
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


if __name__ == "__main__":  # `python facts.py` prints this interpreter's facts as JSON
    print(json.dumps(facts_to_dict(collect_node_facts()), indent=2))
