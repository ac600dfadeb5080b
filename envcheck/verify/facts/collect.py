"""collect_node_facts: this process's view of its machine, from every collector of the package;
and the small facts of the process itself (user, environment, platform, glibc, Slurm)."""

from __future__ import annotations

import getpass
import os
import platform
import sys
import threading
import time
from pathlib import Path

from .archs import (
    cache_path,
    cached_archs,
    finish_arch_probe,
    keep_archs,
    start_arch_probe,
    wanted_frameworks,
)
from .caches import _STAT_MEMO, _cached, _process_constant, dirs_key
from .horovod import start_horovod_probe
from .host import address_link, collect_host_health
from .model import (
    AddressLink,
    Gpu,
    GpuHealth,
    HorovodBuild,
    HostHealth,
    NodeFacts,
    ProcessInfo,
    TensorFlowFacts,
)
from .nccl import _nccl_version
from .nvml import _nvml_facts, collect_gpu_health
from .packages import _conda_meta_packages, _dist_info_packages
from .probes import probe_imports, probe_libraries
from .procfs import nvidia_roots, read_kernel_driver
from .proctree import ancestors, own_pids
from .record import replace
from .tfprobe import finish_tensorflow_probe, start_tensorflow_probe
from .ucx import _ucx_facts
from .visible import resolve_visible_devices, visible_gpu_count

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

# Everything the collectors read from the machine; nothing raises for a missing driver, library
# or package: what could not be read is recorded as a reason string instead.

# Environment variables that change what a GPU job sees; always recorded when set.
ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH", "CONDA_PREFIX")
ENV_PREFIXES = ("UCX_", "NCCL_", "DASK_DISTRIBUTED__COMM", "OMP_NUM_THREADS")


def collect_node_facts(
    role: str = "local",
    address: str = "",
    *,
    extra_env: tuple[str, ...] | list[str] = (),
    import_modules: tuple[str, ...] | list[str] = (),
    libraries: tuple[str, ...] | list[str] = (),
    probe_timeout: float = 60.0, ucx_info_timeout: float = 10.0,
    health: bool | None = None, kernel_log: str = "", arch_probe: bool | None = None,
    horovod_probe: bool | None = None, tensorflow_probe: bool | None = None,
) -> NodeFacts:
    """Gather this process's view of its machine; never raises for missing hardware.

    health: also read the GPUs' and the host's health (ECC, PCIe, NVLink, clocks, limits,
    links, Xid events); None (the default): for "local" and "worker", not for a cluster's
    client and scheduler, which share the caller's busy event loop. kernel_log: a file to read
    Xid lines from instead of the kernel's log. arch_probe: the GPU architectures torch / CuPy
    / xgboost carry, read in a child meanwhile; None: for "local" and "worker" with a loaded
    kernel driver. horovod_probe, tensorflow_probe: facts/horovod.py, facts/tfprobe.py;
    None: for "local" and "worker" where the framework is installed.
    """
    t0 = time.perf_counter()
    # One stat per directory per collection: every stat releases the GIL, and taking it back
    # behind a busy event loop thread (a client's, a scheduler's) costs tens of microseconds.
    _STAT_MEMO[threading.get_ident()] = {}
    archs_child, probes = None, (False, False)
    try:
        env = _interesting_env(extra_env)
        python_packages, packages, builds, source = _installed()
        kernel_driver = read_kernel_driver(*nvidia_roots())
        frameworks, arch_cache, compiled, archs_child = _start_archs(
            {**packages, **python_packages}, role, arch_probe, kernel_driver.version
        )
        probes = (_start_horovod(horovod_probe, role, python_packages),
                  _start_tensorflow(tensorflow_probe, role, python_packages))
        nvml_state, nvml_error, driver, cuda_driver, gpus = _nvml_facts()
        visible, problem = resolve_visible_devices(env.get("CUDA_VISIBLE_DEVICES"), gpus)
        own, above = _process_tree(gpus)
        nccl_version, nccl_source = _nccl_version()
        gpu_health, host_health = _health(role, health, gpus, visible, kernel_log)
        if compiled is None:
            compiled = finish_arch_probe(archs_child, frameworks, probe_timeout)
            keep_archs(arch_cache, compiled)
        facts = NodeFacts(
            **_identity(),
            role=role,
            address=address,
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
            **_probes(import_modules, libraries, probe_timeout),
            nccl_source=nccl_source,
            gpu_health=gpu_health,
            host_health=host_health,
            slurm=slurm_env(),
            address_link=address_link(address) if role == "worker" else AddressLink(),
            kernel_driver=kernel_driver,
            nvml_state=nvml_state,
            compiled_archs=compiled,
            horovod=_finish_horovod(probes[0], probe_timeout),
            tensorflow=_finish_tensorflow(probes[1], probe_timeout, visible_gpu_count(
                env.get("CUDA_VISIBLE_DEVICES"), visible, gpus, kernel_driver.gpus)),
            ancestors=above,
        )
        return replace(facts, collect_seconds=time.perf_counter() - t0)
    finally:
        _STAT_MEMO.pop(threading.get_ident(), None)
        _reap(archs_child, probes[0] and probes[0].proc, probes[1])  # an exception on the way


def _process_tree(gpus: tuple[Gpu, ...]) -> tuple[tuple[int, ...], tuple[ProcessInfo, ...]]:
    """(this process and its descendants, its ancestors): what of a GPU's processes is this
    process's tree. Walking /proc costs milliseconds: only when a GPU lists a process."""
    if not any(g.processes for g in gpus):
        return (os.getpid(),), ()
    return own_pids(os.getpid()), ancestors(os.getpid())


def _start_horovod(wanted: bool | None, role: str, installed: dict[str, str]) -> Any:
    """Probe Horovod when asked, or (None) for "local" and "worker" with Horovod installed.
    False: not probed; else the HorovodProbe under way."""
    if wanted is None:
        wanted = role in ("local", "worker") and "horovod" in installed
    return start_horovod_probe() if wanted else False


def _finish_horovod(probe: Any, timeout: float) -> HorovodBuild:
    return HorovodBuild() if probe is False else probe.finish(timeout)


def _start_tensorflow(wanted: bool | None, role: str, installed: dict[str, str]) -> Any:
    """TensorFlow's child when asked, or (None) for "local" and "worker" where a TensorFlow
    distribution is installed; False when not probed."""
    if wanted is None:
        wanted = role in ("local", "worker") and any(
            name in installed for name in ("tensorflow", "tensorflow-cpu", "tensorflow-gpu"))
    return start_tensorflow_probe() if wanted else False


def _finish_tensorflow(child: Any, timeout: float, gpus: int) -> TensorFlowFacts:
    if child is False:
        return TensorFlowFacts()
    return finish_tensorflow_probe(child, timeout, gpus)


def _reap(*children: Any) -> None:
    for child in children:
        if child and child.poll() is None:
            child.kill()
            child.wait()


def _start_archs(
    installed: dict[str, str], role: str, arch_probe: bool | None, driver_version: str
) -> tuple[tuple[str, ...], str, Any, Any]:
    """(frameworks, cache file, their archs when cached else None, the probe child or None)."""
    if arch_probe is None:
        arch_probe = role in ("local", "worker") and bool(driver_version)
    frameworks = wanted_frameworks(installed) if arch_probe else ()
    arch_cache = cache_path(frameworks) if frameworks else ""
    compiled = cached_archs(arch_cache, frameworks) if frameworks else ()
    child = start_arch_probe(frameworks) if compiled is None else None
    return frameworks, arch_cache, compiled, child


def _probes(modules: Any, libraries: Any, timeout: float) -> dict[str, Any]:
    """Import and library probes in child processes, only when asked for."""
    return {
        "imports": probe_imports(modules, timeout) if modules else (),
        "libraries": probe_libraries(libraries, timeout) if libraries else (),
    }


def _identity() -> dict[str, Any]:
    """Who and what this process is: host, pid, user, Python, platform, glibc."""
    return {
        "host": _hostname(),
        "pid": os.getpid(),
        "user": _current_user(),
        "python": _process_constant("python", platform.python_version),
        "python_executable": sys.executable,
        "platform": _process_constant("platform", conda_platform),
        "glibc": _process_constant("glibc", glibc_version),
    }


def _hostname() -> str:
    """socket.gethostname(): gethostname(2) is uname(2)'s node name on Linux and macOS, read
    without importing socket; socket where there is no os.uname."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def _installed() -> tuple[dict[str, str], dict[str, str], dict[str, str], str]:
    """(dist-info packages on sys.path, packages, conda build strings, where packages came
    from): conda-meta's in a conda environment, else the dist-info ones."""
    python_packages = _dist_info_packages(sys.path)
    meta = os.path.join(sys.prefix, "conda-meta")
    conda = _cached(
        "conda-meta", dirs_key([meta]), lambda: _conda_meta_packages(Path(sys.prefix))
    )
    if conda is not None:
        return python_packages, conda[0], conda[1], "conda-meta"
    # The same dict object for both fields: pickle and facts_to_dict then send it once.
    return python_packages, python_packages, {}, "importlib.metadata"


def _health(
    role: str,
    health: bool | None,
    gpus: tuple[Gpu, ...],
    visible: tuple[str, ...],
    kernel_log: str,
) -> tuple[tuple[GpuHealth, ...], HostHealth]:
    """The GPUs' and the host's health, when `health` (or, when None, the role) asks."""
    if not (health or (health is None and role in ("local", "worker"))):
        return (), HostHealth()
    # verify node judges every GPU of the node; a worker the GPUs it is given (with ~100 NVML
    # calls per GPU, eight workers reading all eight GPUs of their host would read each GPU
    # eight times a round)
    by_uuid = {g.uuid: g.index for g in gpus}
    mine = [g.index for g in gpus] if role != "worker" else [
        by_uuid[u] for u in visible if u in by_uuid
    ]
    gpu_health = collect_gpu_health(mine) if mine else ()
    # dmesg / journalctl fallbacks cost ms to seconds: verify node only, not workers
    return gpu_health, collect_host_health(kernel_log, log_fallbacks=role == "local")


def _current_user() -> str:
    # getpass reads these variables, then the passwd database (through NSS): kept per
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


def slurm_env() -> dict[str, str]:
    """What Slurm told this process: SLURM_* (job, step, node, GPUs) and GPU_DEVICE_ORDINAL."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("SLURM_", "SLURMD_")) or k == "GPU_DEVICE_ORDINAL"
    }
