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
