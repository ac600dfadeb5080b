"""Driver check: present, new enough for the needed CUDA, minor-version compatibility as warn."""

from __future__ import annotations

import pytest

from envcheck.report import Status
from envcheck.verify.node.checks.gpu.driver import MIN_DRIVER, check_driver
from tests.support.factories import expect, healthy_a100x8, no_driver_node


def test_healthy_node_passes_for_the_cuda_it_supports():
    [r] = check_driver(healthy_a100x8(), expect(cuda="12.2"))
    assert r.status is Status.PASS
    assert "535.104.05" in r.message and "12.2" in r.message


def test_old_driver_is_a_failure_naming_the_minimum():
    # CentOS 7 box with an R470 driver (CUDA 11.4) and an environment built for CUDA 12.0
    facts = healthy_a100x8(driver_version="470.82.01", cuda_driver_version="11.4")
    [r] = check_driver(facts, expect(cuda="12.0"))
    assert r.status is Status.FAIL
    assert "too old for CUDA 12.0" in r.message and ">= 525.60.13" in r.message
    assert "upgrade the NVIDIA driver" in r.fix


def test_same_major_older_driver_warns_through_minor_version_compatibility():
    facts = healthy_a100x8(driver_version="470.82.01", cuda_driver_version="11.4")
    [r] = check_driver(facts, expect(cuda="11.8"))
    assert r.status is Status.WARN
    assert "minor version compatibility" in r.message and "520.61.05" in r.message


def test_driver_below_minor_compat_floor_fails():
    facts = healthy_a100x8(driver_version="450.51.06", cuda_driver_version="11.0")
    [r] = check_driver(facts, expect(cuda="11.8"))
    assert r.status is Status.FAIL


@pytest.mark.parametrize(
    ("driver", "cuda", "status"),
    [("520.61.05", "11.8", Status.PASS), ("520.61.04", "11.8", Status.WARN)],
)
def test_table_decides_when_nvml_gave_no_cuda_version(driver, cuda, status):
    facts = healthy_a100x8(driver_version=driver, cuda_driver_version="")
    [r] = check_driver(facts, expect(cuda=cuda))
    assert r.status is status


def test_cuda_13_needs_r580():
    facts = healthy_a100x8(driver_version="575.57.08", cuda_driver_version="12.9")
    [r] = check_driver(facts, expect(cuda="13.0"))
    assert r.status is Status.FAIL and "580.65.06" in r.message
    assert MIN_DRIVER[(13, 0)] == "580.65.06"


def test_no_driver_without_expectations_is_a_skip_that_says_so():
    [r] = check_driver(no_driver_node(), expect())
    assert r.status is Status.SKIP and r.message.startswith("no GPU: NVML did not start")


def test_no_driver_when_the_lock_needs_cuda_fails():
    [r] = check_driver(no_driver_node(), expect(cuda="11.8"))
    assert r.status is Status.FAIL and "CUDA 11.8" in r.message
