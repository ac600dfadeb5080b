"""glibc against the lock's __glibc."""

from __future__ import annotations

from envcheck.report import Status
from envcheck.verify.node.checks.host.glibc import check_glibc
from tests.support.factories import expect, healthy_a100x8


def test_centos7_glibc_is_too_old_for_a_2_28_lock():
    [r] = check_glibc(healthy_a100x8(glibc="2.17"), expect(min_glibc="2.28"))
    assert r.status is Status.FAIL
    assert "glibc 2.17 is older than the 2.28" in r.message and "RHEL/CentOS 7" in r.fix


def test_newer_glibc_passes_numerically_not_lexically():
    [r] = check_glibc(healthy_a100x8(glibc="2.34"), expect(min_glibc="2.4"))
    assert r.status is Status.PASS


def test_non_glibc_system_fails_a_requirement_and_no_requirement_skips():
    assert check_glibc(healthy_a100x8(glibc=""), expect(min_glibc="2.17"))[0].status is Status.FAIL
    assert check_glibc(healthy_a100x8(), expect())[0].status is Status.SKIP
