"""When the embedded cluster's workers import torch as they start (smoke/warm.py)."""

from __future__ import annotations

import pytest

from envcheck.verify.smoke.warm import TORCH_TESTS, worth_warming


@pytest.mark.parametrize("smoke", [None, frozenset({"torch-ddp"}), frozenset({"skorch", "array"})])
def test_a_host_with_cores_to_spare_warms_its_workers_for_a_torch_test(smoke):
    assert worth_warming(smoke, frozenset(), workers=4, cpus=16, torch_installed=True)


@pytest.mark.parametrize(("workers", "cpus"), [(1, 2), (2, 2), (4, 8), (4, 9), (0, 64)])
def test_a_host_without_two_cpus_a_worker_and_two_more_does_not(workers, cpus):
    assert not worth_warming(None, frozenset(), workers=workers, cpus=cpus, torch_installed=True)
    assert worth_warming(None, frozenset(), workers=4, cpus=10, torch_installed=True)


def test_no_torch_test_to_run_means_no_warming():
    assert not worth_warming(frozenset({"submit", "array"}), frozenset(), 2, 64, True)
    assert not worth_warming(frozenset(), frozenset(), 2, 64, True)
    every = frozenset(f"smoke.{t}" for t in TORCH_TESTS)
    assert not worth_warming(None, every, 2, 64, True)
    assert worth_warming(None, every - {"smoke.skorch"}, 2, 64, True)


def test_torch_not_installed_means_no_warming():
    assert not worth_warming(None, frozenset(), 2, 64, torch_installed=False)


def test_the_embedded_cluster_preloads_the_warm_up_only_where_it_pays(monkeypatch):
    """verify cluster's own choice, as it starts the embedded cluster: one worker a GPU on a
    64-CPU host preloads warm.py; --smoke none, --workers past the CPUs, or no torch do not."""
    import importlib.util

    from envcheck.verify.cluster.options import ClusterOptions
    from envcheck.verify.cluster.pipeline import _preload
    from envcheck.verify.smoke import warm

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(warm, "cpus", lambda: 64)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "torch" else real_find_spec(name, *a))
    assert _preload(ClusterOptions(), frozenset(), "LocalCUDACluster", 4) == (warm.PRELOAD,)
    assert _preload(ClusterOptions(smoke="none"), frozenset(), "LocalCUDACluster", 4) == ()
    assert _preload(ClusterOptions(workers=40), frozenset(), "LocalCUDACluster", 4) == ()
    assert _preload(ClusterOptions(), frozenset(), "LocalCluster", 0) == ()  # a worker a CPU
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    assert _preload(ClusterOptions(), frozenset(), "LocalCUDACluster", 4) == ()
