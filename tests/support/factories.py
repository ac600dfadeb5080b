"""NodeFacts factories: descriptions of machines, for testing pure checks without the hardware.

Only the *description* of hardware is made up here; the values follow what NVML reports on
such machines (names, memory totals in MiB, compute capability, NVLink links per GPU).
"""

from __future__ import annotations

import dataclasses

from envcheck.lockfile.model import LockedPackage
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import (
    AddressLink,
    Gpu,
    GpuHealth,
    GpuProcess,
    HostHealth,
    IbPort,
    ImportProbe,
    LibraryProbe,
    NetInterface,
    NodeFacts,
    NvLink,
    UcxFacts,
    resolve_visible_devices,
)

A100 = "NVIDIA A100-SXM4-80GB"
H200 = "NVIDIA H200"
RTX3090 = "NVIDIA GeForce RTX 3090"
V100 = "Tesla V100-SXM2-32GB"

# (name, MiB, compute capability, NVLink links per GPU)
MODELS: dict[str, tuple[int, tuple[int, int], int]] = {
    A100: (81920, (8, 0), 12),
    H200: (143771, (9, 0), 18),
    RTX3090: (24576, (8, 6), 0),
    V100: (32768, (7, 0), 6),
}

# A RAPIDS 22.12-era conda env (names, versions and builds from a real `conda list`,
# /work/shared/data/real/ryan-williams_torch-cuml-gpu-segfault_README_conda-list_rapids-22.12.txt)
CONDA_PACKAGES: dict[str, tuple[str, str]] = {
    "python": ("3.9.13", "h9a8a25e_0_cpython"),
    "numpy": ("1.23.5", "py39h3d75532_0"),
    "dask": ("2022.11.1", "pyhd8ed1ab_0"),
    "distributed": ("2022.11.1", "pyhd8ed1ab_0"),
    "cudatoolkit": ("11.7.0", "hd8887f6_10"),
    "nccl": ("2.14.3.1", "h0800d71_0"),
    "ucx": ("1.13.1", "h538f049_1"),
}


def gpu_uuid(index: int, host_seed: int = 0) -> str:
    # random-looking like real UUIDs: they differ from the first characters on
    return f"GPU-{(index * 2654435761 + host_seed) % 2**32:08x}-5b7d-4c1e-9a2f-{index:012x}"


def make_gpu(
    index: int,
    model: str = A100,
    *,
    used_mib: int = 4,
    processes: tuple[GpuProcess, ...] = (),
    nvlinks: int | None = None,
) -> Gpu:
    mib, cc, links = MODELS[model]
    return Gpu(
        index=index,
        uuid=gpu_uuid(index),
        name=model,
        memory_total_mib=mib,
        memory_used_mib=used_mib + sum(p.used_mib for p in processes),
        compute_capability=cc,
        pci_bus_id=f"00000000:{0x07 + index * 0x10:02X}:00.0",
        nvlinks_active=links if nvlinks is None else nvlinks,
        pcie_gen=4,
        pcie_width=16,
        processes=processes,
    )


def node(
    n_gpus: int = 8,
    model: str = A100,
    *,
    driver: str = "535.104.05",
    cuda_driver: str = "12.2",
    env: dict[str, str] | None = None,
    **overrides: object,
) -> NodeFacts:
    """A healthy GPU node: conda env, UCX with CUDA transports, NCCL, glibc 2.28."""
    gpus = tuple(make_gpu(i, model) for i in range(n_gpus))
    env = dict(env or {})
    visible, problem = resolve_visible_devices(env.get("CUDA_VISIBLE_DEVICES"), gpus)
    facts = NodeFacts(
        host="gpu-node-1",
        pid=4000,
        user="alice",
        role="local",
        address="",
        python="3.9.13",
        python_executable="/opt/conda/envs/rapids/bin/python",
        platform="linux-64",
        glibc="2.28",
        packages={k: v for k, (v, _) in CONDA_PACKAGES.items()},
        package_builds={k: b for k, (_, b) in CONDA_PACKAGES.items()},
        package_source="conda-meta",
        env=env,
        driver_version=driver,
        cuda_driver_version=cuda_driver,
        gpus=gpus,
        visible_gpu_uuids=visible,
        ucx=UcxFacts(
            module="ucp",
            module_version="0.29.0",
            ucx_version="1.13.1",
            transports=("cma", "cuda_copy", "cuda_ipc", "posix", "rc_mlx5", "self", "sysv", "tcp"),
        ),
        nccl_version="2.14.3",
        cuda_device_order=env.get("CUDA_DEVICE_ORDER", ""),
        visible_devices_problem=problem,
        own_pids=(4000,),
        python_packages={"numpy": "1.23.5", "dask": "2022.11.1", "distributed": "2022.11.1"},
    )
    return dataclasses.replace(facts, **overrides) if overrides else facts


def healthy_a100x8(**overrides: object) -> NodeFacts:
    return node(8, A100, **overrides)


def h200x2(**overrides: object) -> NodeFacts:
    return node(2, H200, driver="580.95.05", cuda_driver="13.0", **overrides)


def no_driver_node(**overrides: object) -> NodeFacts:
    """A CPU machine: NVML missing, a plain venv."""
    base = node(0, env={})
    facts = dataclasses.replace(
        base,
        nvml_error="NVML did not start: NVML Shared Library Not Found",
        driver_version="",
        cuda_driver_version="",
        gpus=(),
        visible_gpu_uuids=(),
        ucx=UcxFacts(),
        nccl_version="",
        package_source="importlib.metadata",
        packages={"numpy": "1.23.5", "dask": "2022.11.1"},
        package_builds={},
    )
    return dataclasses.replace(facts, **overrides) if overrides else facts


def with_env(facts: NodeFacts, **env: str) -> NodeFacts:
    """facts as seen with extra environment variables (CUDA_VISIBLE_DEVICES, ...)."""
    merged = {**facts.env, **env}
    visible, problem = resolve_visible_devices(merged.get("CUDA_VISIBLE_DEVICES"), facts.gpus)
    return dataclasses.replace(
        facts,
        env=merged,
        visible_gpu_uuids=visible,
        visible_devices_problem=problem,
        cuda_device_order=merged.get("CUDA_DEVICE_ORDER", ""),
    )


def with_link(facts: NodeFacts, ip: str, interface: str = "eth0", mbps: int = 10000) -> NodeFacts:
    """facts of a worker at tcp://ip:40000 whose address is on `interface` at `mbps` Mb/s
    (-1: a link that reports no speed, as virtio NICs do)."""
    error = "" if mbps > 0 else f"link speed unknown (/sys/class/net/{interface}/speed: -1)"
    return dataclasses.replace(
        facts,
        address=f"tcp://{ip}:40000",
        address_link=AddressLink(ip, interface, mbps, error),
    )


def with_process(
    facts: NodeFacts, gpu_index: int, pid: int, user: str, mib: int, command: str = ""
) -> NodeFacts:
    """facts with one more process holding `mib` on GPU `gpu_index`."""
    held = GpuProcess(pid=pid, used_mib=mib, user=user, command=command)
    gpus = tuple(
        dataclasses.replace(
            g,
            processes=(*g.processes, held),
            memory_used_mib=g.memory_used_mib + mib,
        )
        if g.index == gpu_index
        else g
        for g in facts.gpus
    )
    return dataclasses.replace(facts, gpus=gpus)


def with_imports(facts: NodeFacts, **modules: str) -> NodeFacts:
    """Import probe results: module=error ('' = imported)."""
    probes = tuple(ImportProbe(m, not err, 0.05, err) for m, err in modules.items())
    return dataclasses.replace(facts, imports=probes)


def with_libraries(facts: NodeFacts, **libs: str) -> NodeFacts:
    """Library probe results: name=path ('' = not found)."""
    probes = tuple(
        LibraryProbe(n, bool(p), p, "" if p else f"{n}: cannot open shared object file")
        for n, p in libs.items()
    )
    return dataclasses.replace(facts, libraries=probes)


def lock_for(facts: NodeFacts, platform: str = "linux-64") -> tuple[LockedPackage, ...]:
    """A lock that matches facts' conda packages exactly."""
    return tuple(
        LockedPackage(name, version, facts.package_builds.get(name, ""), "conda", platform)
        for name, version in facts.packages.items()
    )


def expect(**kw: object) -> Expectations:
    return Expectations(**kw)  # type: ignore[arg-type]


# ---- health facts -----------------------------------------------------------------
# Values as NVML reports them on healthy HGX boards: ECC on, no errors, PCIe at the slot's
# maximum (A100: gen4 x16; H200: gen5 x16), every NVLink up with zero error counters,
# persistence on, only the idle clocks-event reason, MIG off, compute mode Default.

PCIE_MAX = {A100: 4, H200: 5, RTX3090: 4, V100: 3}


def gpu_health_for(gpu: Gpu, **overrides: object) -> GpuHealth:
    links = tuple(
        NvLink(i, True, 0, 0, 0, 0) for i in range(MODELS[gpu.name][2])
    )
    health = GpuHealth(
        index=gpu.index,
        uuid=gpu.uuid,
        pci_bus_id=gpu.pci_bus_id,
        ecc_enabled=gpu.name != RTX3090 or None,
        ecc_uncorrected_volatile=0,
        ecc_uncorrected_aggregate=0,
        ecc_corrected_volatile=0,
        ecc_corrected_aggregate=0,
        remapped_rows_correctable=0,
        remapped_rows_uncorrectable=0,
        row_remap_pending=False,
        row_remap_failed=False,
        pcie_gen=PCIE_MAX[gpu.name],
        pcie_width=16,
        pcie_gen_max=PCIE_MAX[gpu.name],
        pcie_width_max=16,
        pcie_replays=0,
        nvlinks=links,
        persistence_mode=True,
        clocks_event_reasons=0x1,
        mig_mode=0,
        mig_mode_pending=0,
        compute_mode=0,
        unsupported=("retired_pages_sbe", "retired_pages_dbe", "retired_pages_pending"),
    )
    return dataclasses.replace(health, **overrides) if overrides else health


def healthy_host(**overrides: object) -> HostHealth:
    """A GPU host as NHC wants it: memlock unlimited, 16 GiB /dev/shm, eth0 and ib0 up."""
    host = HostHealth(
        collected=True,
        memlock_soft=-1,
        memlock_hard=-1,
        nofile_soft=1048576,
        nofile_hard=1048576,
        shm_bytes=16 * 2**30,
        shm_free_bytes=16 * 2**30,
        net_interfaces=(
            NetInterface("eth0", True, "up"),
            NetInterface("ib0", True, "up"),
            NetInterface("lo", True, "unknown"),
        ),
        ib_ports=(IbPort("mlx5_0", 1, "ACTIVE", "LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand"),),
        modules=("nvidia", "nvidia_uvm", "nvidia_peermem", "ib_core"),
        kernel_log_source="/dev/kmsg",
        kernel_log_lines=2310,
        uptime_seconds=86400.0,
    )
    return dataclasses.replace(host, **overrides) if overrides else host


def with_health(facts: NodeFacts, host: HostHealth | None = None, **per_gpu: dict) -> NodeFacts:
    """facts with healthy GPU health for every GPU; per_gpu: gpu0={"pcie_width": 8} overrides."""
    healths = tuple(
        gpu_health_for(g, **per_gpu.get(f"gpu{g.index}", {})) for g in facts.gpus
    )
    return dataclasses.replace(
        facts, gpu_health=healths, host_health=host if host is not None else healthy_host()
    )


def with_gpu_health(
    facts: NodeFacts, index: int, after: bool = False, **fields: object
) -> NodeFacts:
    """facts with fields of one GPU's health replaced (in gpu_health_after when after=True)."""
    key = "gpu_health_after" if after else "gpu_health"
    base = getattr(facts, key) or facts.gpu_health
    return dataclasses.replace(
        facts,
        **{key: tuple(dataclasses.replace(h, **fields) if h.index == index else h for h in base)},
    )
