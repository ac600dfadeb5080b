"""Which modules the embedded cluster's workers import as they start (smoke/warm.py)."""

from __future__ import annotations

import sys
import threading

import pytest

from envcheck.verify.smoke import warm
from envcheck.verify.smoke.warm import WARMED, modules_to_warm

TORCH = ("torch", "torch.distributed")


def everything(module: str) -> bool:
    return True


@pytest.mark.parametrize("smoke", [None, frozenset({"torch-ddp"}), frozenset({"skorch", "array"})])
def test_a_host_with_cores_to_spare_warms_torch_for_a_torch_test(smoke):
    got = modules_to_warm(smoke, frozenset(), workers=4, cpus=16, installed=everything)
    assert "torch" in got


def test_every_test_that_runs_brings_its_modules_once_in_order():
    assert modules_to_warm(None, frozenset(), 4, 16, everything) == ("cupy", *TORCH)
    only_kernel = modules_to_warm(frozenset({"gpu-kernel", "submit"}), frozenset(), 4, 16,
                                  everything)
    assert only_kernel == ("cupy",)
    skorch = modules_to_warm(frozenset({"skorch"}), frozenset(), 4, 16, everything)
    assert skorch == ("torch",)


@pytest.mark.parametrize(("workers", "cpus"), [(1, 2), (2, 2), (4, 8), (4, 9), (0, 64)])
def test_a_host_without_two_cpus_a_worker_and_two_more_warms_nothing(workers, cpus):
    assert modules_to_warm(None, frozenset(), workers, cpus, everything) == ()
    assert modules_to_warm(None, frozenset(), 4, 10, everything) != ()


def test_no_test_that_imports_something_means_no_warming():
    assert modules_to_warm(frozenset({"submit", "array"}), frozenset(), 2, 64, everything) == ()
    assert modules_to_warm(frozenset(), frozenset(), 2, 64, everything) == ()
    every = frozenset(f"smoke.{t}" for t in WARMED)
    assert modules_to_warm(None, every, 2, 64, everything) == ()
    assert modules_to_warm(None, every - {"smoke.skorch"}, 2, 64, everything) == ("torch",)


def test_a_library_not_installed_is_not_warmed():
    def no_cupy(module):
        return module != "cupy"

    assert modules_to_warm(None, frozenset(), 2, 64, no_cupy) == TORCH
    assert modules_to_warm(None, frozenset(), 2, 64, lambda m: False) == ()


def test_the_import_lowers_the_switch_interval_while_it_runs_and_restores_it():
    """The worker's other threads get the GIL back within 0.2 ms while the imports run; after
    them the interpreter's own setting is back. A failing import does not stop the rest."""
    seen = []
    name = "_envcheck_test_warm_probe"

    class Finder:
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            if fullname == name:
                seen.append(sys.getswitchinterval())
            return None

    before = sys.getswitchinterval()
    sys.meta_path.insert(0, Finder)
    try:
        thread = threading.Thread(target=warm._import, args=(("_envcheck_no_such", name),))
        thread.start()
        thread.join(30)
    finally:
        sys.meta_path.remove(Finder)
    assert seen and abs(seen[0] - warm.SWITCH_INTERVAL) < 1e-6
    assert sys.getswitchinterval() == before


def test_the_embedded_cluster_warms_only_where_it_pays(monkeypatch):
    """verify cluster's own choice, as it starts the embedded cluster: one worker a GPU on a
    64-CPU host imports torch; --smoke none, --workers past the CPUs, or no torch do not."""
    import importlib.util

    from envcheck.verify.cluster.options import ClusterOptions
    from envcheck.verify.cluster.pipeline import _warm_modules

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(warm, "cpus", lambda: 64)

    def only_torch(name, *a):
        if name in ("torch", "cupy"):
            return object() if name == "torch" else None
        return real_find_spec(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", only_torch)
    assert _warm_modules(ClusterOptions(), frozenset(), "LocalCUDACluster", 4) == TORCH
    assert _warm_modules(ClusterOptions(smoke="none"), frozenset(), "LocalCUDACluster", 4) == ()
    assert _warm_modules(ClusterOptions(workers=40), frozenset(), "LocalCUDACluster", 4) == ()
    assert _warm_modules(ClusterOptions(), frozenset(), "LocalCluster", 0) == ()  # a worker a CPU
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("torch", "cupy")
                        else real_find_spec(name, *a))
    assert _warm_modules(ClusterOptions(), frozenset(), "LocalCUDACluster", 4) == ()
