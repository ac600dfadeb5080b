"""Functions that run *on* Dask workers for the smoke tests and measurements.

Workers run the user's environment, not ours: envcheck is usually not installed there. So this
module imports only the standard library at the top, imports numpy/cupy/numba/torch inside the
functions that need them, and is pickled *by value* (see ``shipped``). Nothing here may import
from envcheck.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import cloudpickle

# Functions of this module travel by value; their globals (other functions here) go with them.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def shipped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fn`` so that ``client.submit`` ships it by value.

    ``client.run`` pickles the function alone and honours cloudpickle's by-value registry, but
    ``client.submit`` pickles the whole task with plain pickle first, which stores a module
    function by reference (and the worker then fails to import envcheck). A lambda cannot be
    pickled by reference, so distributed falls back to cloudpickle for the task, and cloudpickle
    ships ``fn`` (from a by-value module) along with it.
    """
    return lambda *args, **kwargs: fn(*args, **kwargs)


# --- submit -------------------------------------------------------------------------------


def probe(n: int) -> tuple[int, int, str]:
    """A known answer (sum of 0..n-1) plus which process computed it."""
    return sum(range(n)), os.getpid(), socket.gethostname()


# --- GPU kernel ---------------------------------------------------------------------------


def _uuid_text(raw: Any) -> str:
    """CUDA's 16-byte device UUID in NVML's text form (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)."""
    if isinstance(raw, str):
        return raw if raw.startswith(("GPU-", "MIG-")) else ""
    h = bytes(raw).hex()
    if len(h) != 32:
        return ""
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _nvml_uuid(pci_bus_id: str) -> str:
    """The UUID NVML gives the GPU at `pci_bus_id`: CuPy's device properties carry the UUID as
    a C string, cut at its first zero byte (a UUID starting GPU-00... comes back empty)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id))
        return uuid.decode() if isinstance(uuid, bytes) else str(uuid)
    except Exception:  # no NVML on the worker: the message goes without the UUID
        return ""


def gpu_kernel(n: int) -> dict[str, Any]:
    """Compile and run y = 3x^2 + 1 over 0..n-1 on the worker's current GPU; return sum(y).

    CuPy's ElementwiseKernel compiles through NVRTC, Numba's through NVVM: either proves that the
    worker can build and launch a kernel, not just allocate memory.
    """
    try:
        import cupy as cp
    except ImportError:
        cp = None
    if cp is not None:
        kernel = cp.ElementwiseKernel(
            "float64 x", "float64 y", "y = 3.0 * x * x + 1.0", "envcheck_smoke_kernel"
        )
        y = kernel(cp.arange(n, dtype=cp.float64))
        total = float(y.sum())
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        return {
            "library": f"cupy {cp.__version__}",
            "value": total,
            "uuid": _uuid_text(props.get("uuid", b"")) or _nvml_uuid(dev.pci_bus_id),
            "name": props.get("name", b"").decode(errors="replace"),
            "pci_bus_id": dev.pci_bus_id,
        }
    import numpy as np
    from numba import cuda

    @cuda.jit
    def kernel(x, out):  # pragma: no cover - runs on the GPU
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 3.0 * x[i] * x[i] + 1.0

    x = cuda.to_device(np.arange(n, dtype=np.float64))
    out = cuda.device_array_like(x)
    kernel[(n + 255) // 256, 256](x, out)
    dev = cuda.get_current_device()
    name = dev.name.decode(errors="replace") if isinstance(dev.name, bytes) else str(dev.name)
    return {
        "library": f"numba {sys.modules['numba'].__version__}",
        "value": float(out.copy_to_host().sum()),
        "uuid": _uuid_text(getattr(dev, "uuid", "")),
        "name": name,
        "pci_bus_id": "",
    }


# --- torch.distributed --------------------------------------------------------------------


def free_port() -> int:
    """A TCP port free right now on this worker's host (for torch's rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _init_group(rank: int, world: int, master: str, port: int, backend: str, timeout_s: float):
    import datetime

    import torch
    import torch.distributed as dist

    if dist.is_initialized():  # left over from an earlier run in this worker process
        dist.destroy_process_group()
    device = torch.device("cpu")
    if backend == "gloo" and "GLOO_SOCKET_IFNAME" not in os.environ:
        # gloo binds to the address this host's name resolves to: loopback, or nothing, on
        # many cluster nodes, and then a group across hosts hangs. Name the interface that
        # reaches the master instead.
        iface = _interface_towards(master)
        if iface:
            os.environ["GLOO_SOCKET_IFNAME"] = iface
    if backend == "nccl":
        # dask-cuda puts the worker's own GPU first in CUDA_VISIBLE_DEVICES.
        torch.cuda.set_device(0)
        device = torch.device("cuda", 0)
    dist.init_process_group(
        backend,
        init_method=f"tcp://{master}:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    return torch, dist, device


def _interface_towards(host: str) -> str:
    """Name of the IPv4 interface this process would use to reach ``host`` ("" if unknown)."""
    import fcntl
    import struct

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))  # UDP: no packet is sent, only the route is chosen
            local = s.getsockname()[0]
            for _, name in socket.if_nameindex():
                try:
                    raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))
                except OSError:  # no IPv4 address on it
                    continue
                if socket.inet_ntoa(raw[20:24]) == local:
                    return name
    except OSError:
        return ""
    return ""


def torch_allreduce(
    rank: int, world: int, master: str, port: int, backend: str, timeout_s: float, n: int
) -> dict[str, Any]:
    """Each rank contributes rank+1; after a sum all-reduce every element is world*(world+1)/2.
    Also says where its time went: torch's import, the group, the first all-reduce and the
    group's teardown."""
    import importlib

    t0 = time.perf_counter()
    importlib.import_module("torch")  # timed apart from the group
    t1 = time.perf_counter()
    torch, dist, device = _init_group(rank, world, master, port, backend, timeout_s)
    t2 = time.perf_counter()
    try:
        t = torch.full((n,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(t)
        lo, hi = float(t.min()), float(t.max())
        t3 = time.perf_counter()
    finally:
        dist.destroy_process_group()
    return {
        "phases": {"import": t1 - t0, "group": t2 - t1, "all-reduce": t3 - t2,
                   "teardown": time.perf_counter() - t3},
        "rank": rank,
        "min": lo,
        "max": hi,
        # a str, not torch's TorchVersion: unpickling that would import torch in the client
        "torch": str(torch.__version__),
        "device": str(device),
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if backend == "nccl" else "",
    }


def torch_allreduce_bench(
    rank: int,
    world: int,
    master: str,
    port: int,
    backend: str,
    timeout_s: float,
    nbytes: int,
    warmup: int,
    iters: int,
) -> dict[str, Any]:
    """Time ``iters`` sum all-reduces of ``nbytes`` float32 after ``warmup``; then check one."""
    torch, dist, device = _init_group(rank, world, master, port, backend, timeout_s)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    try:
        # zeros: the sum stays zero, so timing does not depend on values overflowing
        t = torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(t)
        sync()
        dist.barrier()
        sync()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        sync()
        seconds = (time.perf_counter() - start) / iters
        t.fill_(float(rank + 1))
        dist.all_reduce(t)
        sync()
        return {"rank": rank, "seconds": seconds, "min": float(t.min()), "max": float(t.max())}
    finally:
        dist.destroy_process_group()


# --- transfers ----------------------------------------------------------------------------


def make_payload(nbytes: int, gpu: bool) -> Any:
    """Random bytes (so that compression, if the user enabled it, cannot flatter the number)."""
    if gpu:
        import cupy as cp

        out = cp.random.randint(0, 256, size=nbytes, dtype=cp.uint8)
        cp.cuda.Device().synchronize()
        return out
    import numpy as np

    return np.random.default_rng().integers(0, 256, size=nbytes, dtype=np.uint8)


def received(x: Any, key: Any) -> tuple[int, float | None, str]:
    """Runs on the receiving worker after Dask fetched ``x``: its size and the fetch's duration.

    The duration is the one distributed itself logs for the fetch (request, transfer and
    deserialisation on this worker), so no task or scheduler overhead is in it.
    """
    from distributed import get_worker

    size = int(getattr(x, "nbytes", 0) or len(x))
    worker = get_worker()
    # distributed >= 2022.11 names it transfer_incoming_log; before, incoming_transfer_log
    log = getattr(worker, "transfer_incoming_log", None)
    if log is None:
        log = getattr(worker, "incoming_transfer_log", ())
    for entry in reversed(list(log)):
        if key in entry.get("keys", {}):
            return size, float(entry["duration"]), str(entry.get("who", ""))
    return size, None, ""  # the data was already here: nothing was transferred


# --- skorch and dask-pytorch-ddp ------------------------------------------------------------


def skorch_fit(seed: int, gpu: bool) -> dict[str, Any]:
    """A small skorch classifier fit on this worker's device, on a fixed linearly separable
    problem; returns its training accuracy and where it ran."""
    import numpy as np
    import skorch
    import torch

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2000, 8)).astype("float32")
    y = (x @ rng.normal(size=8) > 0).astype("int64")

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.Sequential(
                torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)
            )

        def forward(self, x: Any) -> Any:
            return self.layers(x)

    torch.manual_seed(seed)
    net = skorch.NeuralNetClassifier(
        Net, max_epochs=15, lr=0.05, optimizer=torch.optim.Adam, batch_size=128,
        train_split=None, verbose=0, device="cuda" if gpu else "cpu",
        criterion=torch.nn.CrossEntropyLoss,
    )
    threads = torch.get_num_threads()
    # one CPU thread for a fit this small: the OpenMP pool's barriers between spinning
    # threads are what is slow on a loaded node, not the arithmetic; the worker's own setting
    # is put back
    torch.set_num_threads(1)
    try:
        net.fit(x, y)
        accuracy = float((net.predict(x) == y).mean())
    finally:
        torch.set_num_threads(threads)
    device = str(next(net.module_.parameters()).device)
    return {"accuracy": accuracy, "device": device, "skorch": skorch.__version__,
            "torch": str(torch.__version__)}  # not a TorchVersion (see torch_allreduce)


def ddp_dispatch_allreduce(n: int) -> dict[str, Any]:
    """Run by dask_pytorch_ddp.dispatch.run inside the group it formed: rank r adds r+1."""
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.full((n,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(t)
    return {"rank": rank, "world": world, "min": float(t.min()), "max": float(t.max()),
            "device": str(t.device), "host": socket.gethostname()}
