"""What the GPU tests (tests/gpu) and GPU benches (bench/) start their processes with: the
environment that shows them every GPU in NVML's order, and a process that holds GPU memory (under
another uid with ``AS_NOBODY``) until the test is done with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.nobody import AS_NOBODY

REPO = Path(__file__).resolve().parents[2]

# Holds MiB (argv 2) on one GPU (argv 1, by PCI index) until killed; prints "ready" once the
# memory is real. torch, else cupy.
HOLD_ONE = """
import sys, time
idx, mib = int(sys.argv[1]), int(sys.argv[2])
try:
    import torch
    x = torch.empty(mib * 2**20, dtype=torch.uint8, device=f"cuda:{idx}")
    torch.cuda.synchronize(idx)
except ImportError:
    import cupy
    with cupy.cuda.Device(idx):
        x = cupy.empty(mib * 2**20, dtype=cupy.uint8)
        cupy.cuda.runtime.deviceSynchronize()
print("ready", flush=True)
time.sleep(600)
"""

# Holds all the memory torch can take on its one visible GPU (1 GiB, then 64 MiB, then 4 MiB
# blocks until each runs out), prints "ready" with the MiB it left free, sleeps until killed.
HOLD_ALL = """
import sys, time, torch
held = []
for size in (2**30, 2**26, 2**22):
    while True:
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda:0"))
        except torch.OutOfMemoryError:
            break
torch.cuda.synchronize()
print("ready", torch.cuda.mem_get_info(0)[0] >> 20, flush=True)
time.sleep(600)
"""


def gpu_env(**extra: str) -> dict[str, str]:
    """This environment with every GPU visible, CUDA's indices NVML's (PCI order) and this tree
    first on PYTHONPATH; ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA indices = NVML indices
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


@contextmanager
def holding(
    argv: Sequence[str], env: dict[str, str], listed: Callable[[int], bool]
) -> Iterator[tuple[int, str]]:
    """A holder (``argv`` runs one of the scripts above) with its memory real and NVML listing
    it (``listed(pid)``, true within 60 s or the test fails): yields its pid and its "ready"
    line; killed and reaped at the end."""
    holder = subprocess.Popen([*argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, cwd="/")
    try:
        assert holder.stdout is not None and holder.stderr is not None
        line = holder.stdout.readline()
        if not line.startswith("ready"):
            holder.kill()
            said = holder.stderr.read()[-3000:]
            raise AssertionError(f"the holder never held its memory: {said}")
        deadline = time.monotonic() + 60  # NVML lists the process shortly after the allocation
        while not listed(holder.pid):
            assert time.monotonic() < deadline, "NVML never listed the holder"
            time.sleep(0.5)
        yield holder.pid, line.strip()
    finally:
        holder.kill()
        holder.wait()


def holder_argv(script: str, *args: object, as_nobody: bool = False) -> list[str]:
    """The command line that runs ``script`` (HOLD_ONE, HOLD_ALL) with ``args``, as uid nobody
    when asked."""
    return [*(AS_NOBODY if as_nobody else ()), sys.executable, "-c", script, *map(str, args)]
