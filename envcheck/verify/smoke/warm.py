"""A preload for the workers of the embedded cluster: each worker imports torch in a
background thread as it starts, so the torch smoke tests find it imported rather than waiting
for it after the facts round and the checks (BENCHMARKS.md: "verify cluster against a bare
process").

Only for a cluster envcheck starts itself, only when a torch smoke test will run, and only
where the host has a core to spare for each worker's import (``worth_warming``): with fewer,
the imports take the CPU the facts round and the other smoke tests need. Nothing here reports:
an import that fails leaves torch unimported, and the smoke test's own import then says why.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Collection
from typing import Any

MODULES = ("torch", "torch.distributed")
TORCH_TESTS = ("torch-ddp", "dask-pytorch-ddp", "skorch")
PRELOAD = __name__


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worth_warming(smoke: Collection[str] | None, skip: Collection[str], workers: int,
                  cpus: int, torch_installed: bool) -> bool:
    """Whether the embedded cluster's workers should import torch as they start: a torch
    smoke test will run (``smoke``: the selected tests, None for all; ``skip``: check ids
    such as smoke.torch-ddp), torch is installed, and the host has two CPUs a worker and two
    more (one a worker for its import beside its own work, two for the client and the
    scheduler)."""
    torch_test = any((smoke is None or t in smoke) and f"smoke.{t}" not in skip
                     for t in TORCH_TESTS)
    return torch_test and torch_installed and workers > 0 and cpus >= 2 * workers + 2


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, called as the worker starts."""
    threading.Thread(target=_import, name="envcheck-warm-torch", daemon=True).start()


def _import() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # the smoke test imports it again and reports what fails
            return
