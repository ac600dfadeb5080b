"""The NVIDIA kernel driver and its GPUs as /proc and /dev show them, standard library only.

Any process can read these, with or without NVML (pynvml and libnvidia-ml.so): they are what
lets envcheck say "the driver and N GPUs are here, NVML is what is missing" instead of "no GPU".

    /proc/driver/nvidia/version                    NVRM version: ... Kernel Module  580.159.04 ...
    /proc/driver/nvidia/gpus/<pci>/information     Model:, GPU UUID:, Bus Location:, Device Minor:
    /dev/nvidia[0-9]*, /dev/nvidiactl              the device nodes CUDA opens

The roots are parameters (tests point them at a temporary tree). ENVCHECK_NVIDIA_ROOT=DIR, a
test and diagnostic hook, makes collect_node_facts read DIR/proc/driver/nvidia and DIR/dev
instead: a saved copy of another machine's files is judged as that machine's.
"""

from __future__ import annotations

import os
import re
import stat

from .model import KernelDriver, ProcGpu

ROOT_VARIABLE = "ENVCHECK_NVIDIA_ROOT"

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 ..." or
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_DEVICE_NODE = re.compile(r"nvidia(\d+)$")
# what one information file may hold: a hostile or broken file is cut, not read whole
_MAX_READ = 64 * 1024
_MAX_GPUS = 256


def nvidia_roots() -> tuple[str, str]:
    """(proc root, dev root): "/proc", "/dev", or under $ENVCHECK_NVIDIA_ROOT when set."""
    base = os.environ.get(ROOT_VARIABLE, "")
    if not base:
        return "/proc", "/dev"
    return os.path.join(base, "proc"), os.path.join(base, "dev")


def read_kernel_driver(proc_root: str = "/proc", dev_root: str = "/dev") -> KernelDriver:
    """The loaded NVIDIA kernel module's version, its GPUs and device nodes; never raises."""
    base = os.path.join(proc_root, "driver", "nvidia")
    if not os.path.isdir(base):
        nodes = device_nodes(dev_root)
        why = f"{base} absent: the nvidia kernel module is not loaded"
        return KernelDriver(device_nodes=nodes, error=why)
    version, line, error = "", "", ""
    try:
        text = _read(os.path.join(base, "version"))
        line = text.splitlines()[0].strip() if text.strip() else ""
        found = _VERSION.search(line)
        version = found.group(1) if found else ""
        if not version:
            error = f"{base}/version: no driver version in {line[:120]!r}"
    except OSError as e:
        error = f"{base}/version: {e.strerror or e}"
    gpus, gpu_error = read_proc_gpus(os.path.join(base, "gpus"))
    return KernelDriver(
        version=version,
        version_line=line[:300],
        gpus=gpus,
        device_nodes=device_nodes(dev_root),
        control_node=_is_char_device(os.path.join(dev_root, "nvidiactl")),
        error="; ".join(e for e in (error, gpu_error) if e),
    )


def read_proc_gpus(gpus_dir: str) -> tuple[tuple[ProcGpu, ...], str]:
    """(every GPU under /proc/driver/nvidia/gpus, in PCI order; why some could not be read)."""
    try:
        names = sorted(os.listdir(gpus_dir))[:_MAX_GPUS]
    except OSError as e:
        return (), f"{gpus_dir}: {e.strerror or e}"
    out, errors = [], []
    for name in names:
        path = os.path.join(gpus_dir, name, "information")
        try:
            out.append(parse_information(name, _read(path)))
        except OSError as e:
            errors.append(f"{path}: {e.strerror or e}")
    return tuple(out), "; ".join(errors)


def parse_information(pci: str, text: str) -> ProcGpu:
    """One /proc/driver/nvidia/gpus/<pci>/information file ("Key: \\t value" lines)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()[:200]
    minor = fields.get("device minor", "")
    return ProcGpu(
        pci_bus_id=fields.get("bus location") or pci[:64],
        model=fields.get("model", ""),
        uuid=fields.get("gpu uuid", ""),
        minor=int(minor) if minor.isdigit() else -1,
        bus_type=fields.get("bus type", ""),
        video_bios=fields.get("video bios", ""),
        excluded=fields.get("gpu excluded", "").lower() == "yes",
    )


def device_nodes(dev_root: str = "/dev") -> tuple[str, ...]:
    """The /dev/nvidiaN character devices, by N."""
    found = []
    for name in names_in(dev_root):
        m = _DEVICE_NODE.match(name)
        if m and _is_char_device(os.path.join(dev_root, name)):
            found.append((int(m.group(1)), os.path.join(dev_root, name)))
    return tuple(path for _, path in sorted(found))


def names_in(directory: str | os.PathLike) -> list[str]:
    """The names of ``directory``'s entries; none when it cannot be listed (gone, not a
    directory, not ours to read)."""
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _is_char_device(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _read(path: str) -> str:
    # procfs files are regular files reporting size 0: read a bounded amount, not by size.
    # Anything else (a FIFO that would block the open, a device) is refused unread.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return os.read(fd, _MAX_READ).decode("utf-8", "replace")
    finally:
        os.close(fd)
