"""Installed packages against a lock, including a real conda-lock excerpt."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from envcheck.lockfile import read_lock
from envcheck.lockfile.model import LockedPackage
from envcheck.report import Status
from envcheck.verify.expectations import implied_by_lock
from envcheck.verify.node.checks.env.packages import check_packages
from tests.support.factories import expect, healthy_a100x8, lock_for, no_driver_node

EXCERPT = Path(__file__).parents[1] / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"


def test_environment_matching_its_lock_passes():
    facts = healthy_a100x8()
    [r] = check_packages(facts, expect(lock_packages=lock_for(facts), lock_path="env.lock"))
    assert r.status is Status.PASS and "all 7 locked packages" in r.message


def test_drift_lists_missing_wrong_version_and_wrong_build_by_name():
    facts = healthy_a100x8()
    lock = lock_for(facts) + (LockedPackage("xgboost", "1.7.1", "cuda_0", "conda", "linux-64"),)
    drifted = dataclasses.replace(
        facts,
        packages={**facts.packages, "numpy": "1.24.0"},
        package_builds={**facts.package_builds, "nccl": "h0800d71_1"},
    )
    [r] = check_packages(drifted, expect(lock_packages=lock, lock_path="env.lock"))
    assert r.status is Status.FAIL
    assert "missing 1: xgboost 1.7.1" in r.message
    assert "wrong version 1: numpy 1.24.0 (lock 1.23.5)" in r.message
    assert "wrong build 1: nccl 2.14.3.1 build h0800d71_1 (lock h0800d71_0)" in r.message


def test_conda_lock_in_a_plain_venv_fails_with_how_to_create_it():
    lock = lock_for(healthy_a100x8())
    [r] = check_packages(no_driver_node(), expect(lock_packages=lock, lock_path="env.lock"))
    assert r.status is Status.FAIL and "not in a conda environment" in r.message
    assert "envcheck install env.lock --prefix PREFIX" in r.fix


def test_pip_entries_compare_with_python_distributions():
    lock = (LockedPackage("dask", "2022.11.1", "", "pip", "linux-64"),)
    assert check_packages(no_driver_node(), expect(lock_packages=lock))[0].status is Status.PASS
    lock = (LockedPackage("dask", "2024.1.0", "", "pip", "linux-64"),)
    [r] = check_packages(no_driver_node(), expect(lock_packages=lock))
    assert r.status is Status.FAIL and "dask 2022.11.1 (lock 2024.1.0)" in r.message


def test_lock_for_another_platform_fails():
    lock = lock_for(healthy_a100x8(), platform="linux-aarch64")
    [r] = check_packages(healthy_a100x8(), expect(lock_packages=lock))
    assert r.status is Status.FAIL and "no packages for linux-64" in r.message


def test_no_lock_skips():
    assert check_packages(healthy_a100x8(), expect())[0].status is Status.SKIP


def test_real_lock_excerpt_gives_builds_cuda_glibc_and_key_modules():
    locked = read_lock(EXCERPT).packages
    by_name = {p.name: p for p in locked}
    assert by_name["pytorch"].build == "cuda112py310he33e0d6_200"  # from the url file name
    implied = implied_by_lock(locked)
    assert implied["cuda"] == "11.8"  # cuda-version pin
    assert implied["glibc"] == "2.17"  # the largest lower bound of __glibc
    assert set(implied["modules"]) == {"numpy", "dask", "distributed", "torch"}
    assert set(implied["libraries"]) == {"libnccl.so.2", "libopenblas.so.0"}
    assert implied["ucx"] is True
    # a RAPIDS 22.12 env judged against the pangeo lock: every difference is named
    [r] = check_packages(healthy_a100x8(), expect(lock_packages=locked))
    assert r.status is Status.FAIL
    assert "python 3.9.13 (lock 3.10.11)" in r.message and "pytorch 2.0.0" in r.message
