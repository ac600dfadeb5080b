"""What one process sees of its machine, as plain frozen data, and that data as plain dicts
(facts_to_dict / facts_from_dict) for shipping facts between processes.

The classes are @frozen (record.py): frozen dataclasses as dataclasses.fields, asdict and
replace see them, cheaper to define."""

from __future__ import annotations

from .record import field, field_names, frozen

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


@frozen
class GpuProcess:
    pid: int
    used_mib: int
    user: str = ""  # "" where unreadable
    command: str = ""  # its command line, cut short ("" where unreadable)


@frozen
class ProcessInfo:
    """One process as /proc shows it: a link of a ppid chain."""

    pid: int
    ppid: int  # 0: no parent visible (pid 1, or the top of this pid namespace)
    user: str = ""  # "" where unreadable
    command: str = ""  # its command line, cut short (the kernel's name for it when empty)


@frozen
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


@frozen
class UcxFacts:
    module: str = ""  # "ucxx", "ucp" (ucx-py) or "" when neither imports
    module_version: str = ""
    ucx_version: str = ""
    transports: tuple[str, ...] = ()
    error: str = ""


@frozen
class ImportProbe:
    """Whether one module imported in a fresh child process (catches missing OS libraries)."""

    module: str
    ok: bool
    seconds: float = 0.0
    error: str = ""  # last line of the exception, "timed out after 60 s", "crashed (signal 11)"


@frozen
class LibraryProbe:
    """Whether one shared library resolves through the dynamic loader, as this Python sees it."""

    name: str  # as asked: "nccl", "libopenblas.so.0"
    found: bool
    path: str = ""  # the file the loader mapped
    error: str = ""


# ---- health facts: what DCGM level 1, gcm and NHC read, as plain data ------------
# Every NVML value is Optional: None means "not read"; the field's name is then in
# GpuHealth.unsupported (NVML said NotSupported: no ECC on a GeForce, no NVLink on PCIe cards)
# or in GpuHealth.errors with NVML's message.


@frozen
class NvLink:
    link: int
    up: bool
    # Counters since the driver loaded. replay, recovery: NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY /
    # _RECOVERY (field values, scope = link), else nvmlDeviceGetNvLinkErrorCounter.
    replay: int | None = None
    recovery: int | None = None
    # nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_CRC_FLIT / _CRC_DATA): per link
    crc_flit: int | None = None
    crc_data: int | None = None
    # NVML_FI_DEV_NVLINK_ERROR_DL_CRC (scope = link): the "CRC Errors" nvidia-smi nvlink -e
    # prints on Hopper; None where the GPU does not answer it (nvidia-smi then shows the two
    # counters above)
    crc: int | None = None


@frozen
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
    sm_clock_mhz: int | None = None  # current SM clock
    temperature_c: int | None = None  # GPU core temperature
    unsupported: tuple[str, ...] = ()  # fields NVML answered NotSupported / not in this driver
    errors: tuple[str, ...] = ()  # "field: NVML error" for any other failure
    read_at: float = 0.0  # time.time() of the read (0: unknown); counters' rates use it


@frozen
class XidEvent:
    """One `NVRM: Xid (PCI:0000:3b:00): 79, ...` kernel log line."""

    code: int
    pci: str  # as the line gives it: "0000:3b:00" (domain:bus:device)
    seconds: float = -1.0  # since boot; -1 when the line carries no monotonic time
    text: str = ""  # what follows the code, cut to 200 characters


@frozen
class NetInterface:
    name: str
    up: bool  # IFF_UP (administratively up)
    operstate: str = ""  # /sys/class/net/<name>/operstate: "up", "down", "unknown" (lo)


@frozen
class AddressLink:
    """The network interface that holds the IP of this process's Dask address, and its speed."""

    ip: str = ""  # "10.77.0.2"; "" when not looked up (no address, not a worker)
    interface: str = ""  # "eth0"; "" when no interface of this process holds the IP
    speed_mbps: int = -1  # /sys/class/net/<interface>/speed; -1 unknown (lo, virtual, down)
    error: str = ""  # why the interface or its speed is unknown


@frozen
class IbPort:
    device: str  # "mlx5_0"
    port: int
    state: str = ""  # "ACTIVE", "DOWN", "INIT", "ARMED"
    phys_state: str = ""  # "LinkUp", "Polling", "Disabled"
    rate: str = ""  # "200 Gb/sec (4X HDR)"
    link_layer: str = ""  # "InfiniBand" or "Ethernet" (RoCE)


@frozen
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


@frozen
class ProcGpu:
    """One GPU as the kernel driver lists it (/proc/driver/nvidia/gpus/<pci>/information)."""

    pci_bus_id: str  # "0000:00:06.0"
    model: str = ""  # "NVIDIA H100 80GB HBM3"
    uuid: str = ""  # "GPU-5c83b59a-..."
    minor: int = -1  # Device Minor: N of /dev/nvidiaN
    bus_type: str = ""  # "PCIe", "SXM"
    video_bios: str = ""
    excluded: bool = False  # "GPU Excluded: Yes": the driver keeps it from every client


@frozen
class KernelDriver:
    """The NVIDIA kernel module, its GPUs and device nodes, read without NVML."""

    version: str = ""  # "580.159.04"; "" when the module is not loaded
    version_line: str = ""  # the first line of /proc/driver/nvidia/version
    gpus: tuple[ProcGpu, ...] = ()
    device_nodes: tuple[str, ...] = ()  # "/dev/nvidia0", ... (character devices)
    control_node: bool = False  # /dev/nvidiactl is a character device
    error: str = ""  # what could not be read and why


@frozen
class CompiledArchs:
    """The GPU architectures a framework's build carries, as a child interpreter read them.

    archs: "sm_90" (SASS, runs as is), "compute_90" (PTX, compiled by the driver at start-up);
    for CuPy, which compiles its kernels at run time through NVRTC, the "sm_XY" NVRTC can build.
    """

    framework: str  # "torch", "cupy", "xgboost"
    version: str = ""
    cuda: str = ""  # the CUDA the build is for ("12.8"); "" for a CPU-only build
    archs: tuple[str, ...] = ()
    runtime_compiled: bool = False  # CuPy: kernels built at run time for the GPU found
    error: str = ""  # why the architectures are unknown (import failed, not exposed)


@frozen
class GemmRun:
    """One matrix multiply timed on one GPU by verify node --level 2, and what NVML read of
    that GPU while the load ran (the lowest SM clock, the highest temperature, the clocks event
    reasons seen)."""

    index: int  # NVML index
    name: str
    dtype: str  # "float32", "bfloat16", "float16"
    n: int = 0  # n x n times n x n
    tflops: float = 0.0
    max_rel_error: float = -1.0  # max |C - C_fp64| / max |C_fp64| over a block of rows
    tolerance: float = 0.0
    tf32: bool = False  # float32 through TF32 tensor cores (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE)
    framework: str = ""
    error: str = ""  # why it did not run
    out_of_memory: bool = False  # it did not run for want of device memory (an OOM error)
    sm_clock_min_mhz: int | None = None
    temperature_max_c: int | None = None
    clocks_event_reasons: int = 0  # OR of every sample's bitmask



@frozen
class HorovodFramework:
    """One of Horovod's framework extensions (horovod.torch, horovod.tensorflow, horovod.mxnet)
    as a child interpreter found it."""

    name: str  # horovod's module name: "torch", "tensorflow", "mxnet"
    built: bool = False  # its compiled extension is installed (the build included it)
    available: bool = False  # horovod.<name> imports: what `horovodrun -cb` marks [X]
    installed: str = ""  # the framework's __version__ here ("" when it does not import)
    built_with: str = ""  # the framework version Horovod's build recorded (metadata.json)
    error: str = ""  # why horovod.<name> (or the framework itself) did not import


@frozen
class HorovodBuild:
    """What `horovodrun --check-build` reports, read from Horovod's own build-info functions
    (horovod.<framework>.mpi_built(), gloo_built(), nccl_built(), ...). Empty when Horovod is
    not installed or was not probed."""

    version: str = ""  # horovod.__version__; "" when it does not import
    frameworks: tuple[HorovodFramework, ...] = ()
    controllers: tuple[str, ...] = ()  # built in, as -cb names them: "MPI", "Gloo"
    tensor_ops: tuple[str, ...] = ()  # "NCCL", "DDL", "CCL", "MPI", "Gloo"
    nccl_version: str = ""  # the NCCL Horovod was compiled with ("" without NCCL)
    gpu: str = ""  # "CUDA", "ROCm", or "" for a CPU-only build ("?" when unknown)
    source: str = ""  # "probe", or "horovodrun -cb" for facts parsed from its output
    error: str = ""  # why Horovod could not be read (import horovod failed, probe timed out)

    @property
    def present(self) -> bool:
        return bool(self.version or self.error)

@frozen
class TensorFlowFacts:
    """What TensorFlow says of itself and of a MirroredStrategy; empty when not probed."""

    version: str = ""  # "" when it does not import or was not probed
    cuda_build: bool = False
    cuda: str = ""  # the CUDA its build targets ("12.5"); "" for CPU builds
    cudnn: str = ""
    gpus: int = -1  # GPUs tf.config lists (-1: not read)
    replicas: int = 0  # MirroredStrategy().num_replicas_in_sync
    reduce: float | None = None  # the sum of replica_id + 1 over the replicas
    # logical CPU devices the child made for the strategy (0: none; it makes them only where no
    # GPU is listed or expected)
    logical_cpus: int = 0
    error: str = ""  # why TensorFlow or the strategy could not be read

    @property
    def present(self) -> bool:
        return bool(self.version or self.error)


# NodeFacts.nvml_state: why NVML facts are missing, one word a check can branch on
NVML_OK = "ok"
NVML_NO_MODULE = "no-module"  # pynvml (nvidia-ml-py) does not import
NVML_NO_LIBRARY = "no-library"  # pynvml imports, libnvidia-ml.so does not load
NVML_NO_DRIVER = "no-driver"  # NVML loaded, the kernel driver is not there
NVML_MISMATCH = "mismatch"  # libnvidia-ml.so and the kernel module are different versions
NVML_INIT_FAILED = "init-failed"  # nvmlInit failed otherwise (permissions, a lost GPU...)
NVML_READ_FAILED = "read-failed"  # NVML started, reading the GPUs failed
NVML_NO_GPU = "no-gpu"  # NVML answered and lists no GPU


@frozen
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
    # Health facts: NVML per GPU and the host's limits, links and kernel log.
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
    # The kernel driver as /proc and /dev show it (no NVML needed), and why NVML facts are
    # missing as one word (NVML_* above; "" from a collector older than this field).
    kernel_driver: KernelDriver = field(default_factory=KernelDriver)
    nvml_state: str = ""
    # The architectures torch / CuPy / xgboost builds carry (child probe); () when not probed.
    compiled_archs: tuple[CompiledArchs, ...] = ()
    # verify node --level 2's matrix multiplies: () when no load ran
    gemm: tuple[GemmRun, ...] = ()
    # Horovod's build (horovodrun --check-build's facts, child probe); empty: not installed
    horovod: HorovodBuild = field(default_factory=HorovodBuild)
    # TensorFlow's build, its GPUs and a MirroredStrategy (child probe); empty: not installed
    tensorflow: TensorFlowFacts = field(default_factory=TensorFlowFacts)
    # This process's parent, its parent, ... up the ppid chain (read, like own_pids, only when
    # a GPU lists processes): a launcher or nanny above it on a GPU is not foreign.
    ancestors: tuple[ProcessInfo, ...] = ()


# ---- plain data, for shipping facts between processes ---------------------------------------


def facts_to_dict(facts: NodeFacts) -> dict[str, Any]:
    """A JSON-able dict; facts_from_dict(facts_to_dict(f)) == f.

    Field by field rather than dataclasses.asdict, which deep-copies every value through a
    generic walk. Dicts are copied (the caller may change them); a dict two fields share is
    copied once and stays shared, so pickle sends it once.
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
    out["ancestors"] = tuple(_shallow(a) for a in facts.ancestors)
    out["compiled_archs"] = tuple(_shallow(c) for c in facts.compiled_archs)
    out["gemm"] = tuple(_shallow(g) for g in facts.gemm)
    hv = facts.horovod
    out["horovod"] = {**_shallow(hv), "frameworks": tuple(_shallow(f) for f in hv.frameworks)}
    out["tensorflow"] = _shallow(facts.tensorflow)
    kd = facts.kernel_driver
    out["kernel_driver"] = {**_shallow(kd), "gpus": tuple(_shallow(g) for g in kd.gpus)}
    return out


# HostHealth fields that hold tuples of dataclasses, and their classes
_HOST_HEALTH_LISTS = {"net_interfaces": NetInterface, "ib_ports": IbPort, "xid_events": XidEvent}


def _shallow(obj: Any) -> dict[str, Any]:
    # Every other field holds a str, number or tuple of them: immutable, shared as is.
    return {n: getattr(obj, n) for n in field_names(type(obj))}


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
    d["ancestors"] = tuple(ProcessInfo(**_known(ProcessInfo, a)) for a in d.get("ancestors", ()))
    kd = _known(KernelDriver, d.get("kernel_driver") or {})
    kd["gpus"] = tuple(ProcGpu(**_known(ProcGpu, g)) for g in kd.get("gpus", ()))
    kd["device_nodes"] = tuple(kd.get("device_nodes", ()))
    d["kernel_driver"] = KernelDriver(**kd)
    d["compiled_archs"] = tuple(_compiled_from_dict(c) for c in d.get("compiled_archs", ()))
    d["gemm"] = tuple(GemmRun(**_known(GemmRun, g)) for g in d.get("gemm", ()))
    d["horovod"] = horovod_from_dict(d.get("horovod") or {})
    d["tensorflow"] = tensorflow_from_dict(d.get("tensorflow") or {})
    return NodeFacts(**d)


def _compiled_from_dict(c: dict[str, Any]) -> CompiledArchs:
    d = _known(CompiledArchs, c)
    d["archs"] = tuple(d.get("archs", ()))
    return CompiledArchs(**d)


def horovod_from_dict(h: dict[str, Any]) -> HorovodBuild:
    """HorovodBuild from its plain dict (facts_to_dict's "horovod")."""
    d = _known(HorovodBuild, h)
    d["frameworks"] = tuple(
        HorovodFramework(**_known(HorovodFramework, f)) for f in d.get("frameworks", ())
    )
    d["controllers"] = tuple(d.get("controllers", ()))
    d["tensor_ops"] = tuple(d.get("tensor_ops", ()))
    return HorovodBuild(**d)


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
    names = field_names(cls)
    return {k: v for k, v in data.items() if k in names}


def tensorflow_from_dict(d: dict[str, Any]) -> TensorFlowFacts:
    """TensorFlowFacts from its plain dict (facts_to_dict's "tensorflow")."""
    return TensorFlowFacts(**_known(TensorFlowFacts, d))
