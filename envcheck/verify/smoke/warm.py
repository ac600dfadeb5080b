"""A preload for the workers of the embedded cluster: each worker imports, in a background
thread as it starts, the modules the selected smoke tests import on it (torch for the torch
tests, CuPy for the GPU kernel), so those tests find them imported rather than waiting for
them after the facts round and the checks (BENCHMARKS.md: "verify cluster against a bare
process").

Only for a cluster envcheck starts itself, only for the tests that will run, and only where
the host has a core to spare for each worker's imports (``modules_to_warm``): with fewer, the
imports take the CPU the facts round and the other smoke tests need. Nothing here reports: an
import that fails leaves the module unimported, and the smoke test's own import then says why.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable, Collection
from typing import Any

# smoke test -> the modules its task imports on a worker, the first being the one that must be
# installed for the test to run at all
WARMED = {
    "gpu-kernel": ("cupy",),
    "torch-ddp": ("torch", "torch.distributed"),
    "dask-pytorch-ddp": ("torch", "torch.distributed"),
    "skorch": ("torch",),
}
PRELOAD = __name__
# The modules travel in the Dask config the nanny hands its worker process: dask-cuda appends
# its own preload and argv to every worker's, so a preload argv would reach both preloads.
CONFIG_KEY = "envcheck-warm"
THREAD = "envcheck-warm"
# While the imports run, the worker's other threads (its event loop, the facts collector, the
# tasks) wait for the GIL after each C call, up to the switch interval, 5 ms by default: the
# facts round makes a few hundred NVML calls a worker on a 4-GPU host. 0.2 ms lets them in
# sooner.
SWITCH_INTERVAL = 0.0002


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def modules_to_warm(smoke: Collection[str] | None, skip: Collection[str], workers: int,
                    cpus: int, installed: Callable[[str], bool]) -> tuple[str, ...]:
    """The modules the embedded cluster's workers should import as they start: those of each
    smoke test that will run (``smoke``: the selected tests, None for all; ``skip``: check ids
    such as smoke.torch-ddp) whose library is installed, in WARMED's order; none unless the
    host has two CPUs a worker and two more (one a worker for its imports beside its own work,
    two for the client and the scheduler)."""
    if workers <= 0 or cpus < 2 * workers + 2:
        return ()
    chosen: list[str] = []
    for test, modules in WARMED.items():
        runs = (smoke is None or test in smoke) and f"smoke.{test}" not in skip
        if runs and installed(modules[0]):
            chosen += [m for m in modules if m not in chosen]
    return tuple(chosen)


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, called as the worker starts: import CONFIG_KEY's modules in a
    background thread."""
    import dask.config

    modules = tuple(dask.config.get(CONFIG_KEY, default=None) or ())
    if modules:
        threading.Thread(target=_import, args=(modules,), name=THREAD, daemon=True).start()


def _import(modules: tuple[str, ...]) -> None:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the smoke test imports it again and reports what fails
                continue
    finally:
        if abs(sys.getswitchinterval() - SWITCH_INTERVAL) < 1e-6:  # nobody else changed it
            sys.setswitchinterval(previous)
