"""What one process sees of its machine, as plain frozen data.

This module imports only the standard library (and pynvml, lazily). It is shipped *by value*
to Dask workers and schedulers that do not have envcheck installed, so it must never import
anything else from envcheck, nor torch/cupy unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
