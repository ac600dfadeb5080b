"""UCX: missing when expected, transports a multi-GPU node should have."""

from __future__ import annotations

import dataclasses

from envcheck.report import Status
from envcheck.verify.facts import UcxFacts
from envcheck.verify.node.checks.host.ucx import check_ucx
from tests.support.factories import RTX3090, expect, healthy_a100x8, no_driver_node, node


def test_healthy_node_has_cuda_transports_and_nvlink():
    [r] = check_ucx(healthy_a100x8(), expect(expect_ucx=True))
    assert r.status is Status.PASS
    assert "cuda_copy" in r.message and "12 NVLink links" in r.message


def test_missing_ucx_when_expected_fails_mentioning_tcp_fallback():
    facts = healthy_a100x8(ucx=UcxFacts())
    [r] = check_ucx(facts, expect(expect_ucx=True))
    assert r.status is Status.FAIL and "falls back to TCP" in r.message
    assert "distributed-ucxx" in r.fix


def test_missing_ucx_not_expected_skips():
    assert check_ucx(no_driver_node(), expect())[0].status is Status.SKIP


def test_ucx_without_cuda_transports_fails_and_without_ipc_warns():
    cpu_only = UcxFacts("ucp", "0.29.0", "1.13.1", ("posix", "self", "tcp"))
    results = check_ucx(healthy_a100x8(ucx=cpu_only), expect(expect_ucx=True))
    assert [r.status for r in results] == [Status.FAIL, Status.WARN]
    assert "no cuda_copy" in results[0].message and "no cuda_ipc" in results[1].message


def test_pcie_only_multi_gpu_node_gets_a_clear_warning():
    facts = node(4, RTX3090)
    [r] = check_ucx(facts, expect(expect_ucx=True))
    assert r.status is Status.WARN and "no active NVLink" in r.message


def test_transports_unknown_warns():
    facts = healthy_a100x8()
    facts = dataclasses.replace(facts, ucx=UcxFacts("ucxx", "0.45", "", (), "ucx_info not found"))
    [r] = check_ucx(facts, expect(expect_ucx=True))
    assert r.status is Status.WARN and "ucx_info not found" in r.message
