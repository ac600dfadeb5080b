"""What one process sees of its machine, as plain frozen data.

This package imports only the standard library (and pynvml, lazily), and its modules import
only each other. It is shipped *by value* (envcheck/verify/shipping.py) to Dask workers and
schedulers and to `--prefix` interpreters that do not have envcheck installed, so it must
never import anything else from envcheck, nor torch/cupy unless asked.

model        the frozen dataclasses (NodeFacts, Gpu, GpuHealth, HostHealth, ...) and
             facts_to_dict / facts_from_dict
collect      collect_node_facts, and the process's own facts (user, env, platform, glibc)
caches       per-process caches keyed on directories' (mtime, inode)
packages     conda-meta and dist-info readers
nvml         GPUs and their health through pynvml
proctree     a process's owner, parent and command line; the ppid chain above it, its tree
visible      CUDA_VISIBLE_DEVICES as CUDA reads it
ucx, nccl    UCX binding, version and transports; NCCL's version
archs        the GPU architectures torch / CuPy / xgboost builds carry (child probe)
horovod      Horovod's build as horovodrun --check-build reports it (child probe), its parser
tfprobe      TensorFlow: its build, the GPUs it lists, a MirroredStrategy reduce (child probe)
probes       import and shared-library probes in child interpreters
procfs       the NVIDIA kernel driver, its GPUs and /dev nodes from /proc and /dev (no NVML)
host         rlimits, /dev/shm, interfaces, rtnetlink, InfiniBand ports, kernel modules
kernel_log   Xid events from /dev/kmsg, dmesg, journalctl -k or a file
"""

from __future__ import annotations

from .caches import dirs_key
from .collect import (
    ENV_NAMES,
    ENV_PREFIXES,
    collect_node_facts,
    conda_platform,
    glibc_version,
    slurm_env,
)
from .host import (
    KERNEL_MODULES,
    NET_VARIABLES,
    address_ip,
    address_link,
    collect_host_health,
    interface_holding,
    read_ib_ports,
    read_net_interfaces,
)
from .kernel_log import parse_xid_line, read_kernel_log
from .model import (
    NVML_INIT_FAILED,
    NVML_MISMATCH,
    NVML_NO_DRIVER,
    NVML_NO_GPU,
    NVML_NO_LIBRARY,
    NVML_NO_MODULE,
    NVML_OK,
    NVML_READ_FAILED,
    AddressLink,
    CompiledArchs,
    GemmRun,
    Gpu,
    GpuHealth,
    GpuProcess,
    HorovodBuild,
    HorovodFramework,
    HostHealth,
    IbPort,
    ImportProbe,
    KernelDriver,
    LibraryProbe,
    NetInterface,
    NodeFacts,
    NvLink,
    ProcessInfo,
    ProcGpu,
    TensorFlowFacts,
    UcxFacts,
    XidEvent,
    facts_from_dict,
    facts_to_dict,
)
from .nccl import decode_nccl_version
from .nvml import collect_gpu_clocks, collect_gpu_health, gpu_health
from .packages import normalize_name
from .probes import SONAMES, probe_imports, probe_libraries
from .procfs import ROOT_VARIABLE, nvidia_roots, parse_information, read_kernel_driver
from .ucx import parse_ucx_info
from .visible import resolve_visible_devices

__all__ = [
    "NVML_INIT_FAILED",
    "NVML_MISMATCH",
    "NVML_NO_DRIVER",
    "NVML_NO_GPU",
    "NVML_NO_LIBRARY",
    "NVML_NO_MODULE",
    "NVML_OK",
    "NVML_READ_FAILED",
    "ROOT_VARIABLE",
    "KernelDriver",
    "ProcGpu",
    "nvidia_roots",
    "parse_information",
    "read_kernel_driver",
    "ENV_NAMES",
    "ENV_PREFIXES",
    "KERNEL_MODULES",
    "NET_VARIABLES",
    "SONAMES",
    "AddressLink",
    "CompiledArchs",
    "GemmRun",
    "Gpu",
    "GpuHealth",
    "GpuProcess",
    "HorovodBuild",
    "TensorFlowFacts",
    "HorovodFramework",
    "HostHealth",
    "IbPort",
    "ImportProbe",
    "LibraryProbe",
    "NetInterface",
    "NodeFacts",
    "NvLink",
    "ProcessInfo",
    "UcxFacts",
    "XidEvent",
    "address_ip",
    "address_link",
    "collect_gpu_clocks",
    "collect_gpu_health",
    "collect_host_health",
    "collect_node_facts",
    "conda_platform",
    "decode_nccl_version",
    "dirs_key",
    "facts_from_dict",
    "facts_to_dict",
    "glibc_version",
    "gpu_health",
    "interface_holding",
    "normalize_name",
    "parse_ucx_info",
    "parse_xid_line",
    "probe_imports",
    "probe_libraries",
    "read_ib_ports",
    "read_kernel_log",
    "read_net_interfaces",
    "resolve_visible_devices",
    "slurm_env",
]
