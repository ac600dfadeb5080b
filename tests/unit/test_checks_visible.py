"""CUDA_VISIBLE_DEVICES: the CUDA runtime's rules, and what the check says about them."""

from __future__ import annotations

import pytest

from envcheck.report import Status
from envcheck.verify.facts import resolve_visible_devices
from envcheck.verify.node.checks.gpu.visible import check_visible
from tests.support.factories import (
    A100,
    RTX3090,
    expect,
    gpu_uuid,
    h200x2,
    healthy_a100x8,
    make_gpu,
    no_driver_node,
    with_env,
)


def test_duplicate_index_hides_every_gpu_and_fails():
    facts = with_env(h200x2(), CUDA_VISIBLE_DEVICES="0,0")
    assert facts.visible_gpu_uuids == ()
    [r] = check_visible(facts, expect())
    assert r.status is Status.FAIL
    assert "CUDA_VISIBLE_DEVICES='0,0'" in r.message
    assert "names a GPU already listed: CUDA then exposes no GPU" in r.message


def test_unknown_index_drops_it_and_the_rest():
    uuids, problem = resolve_visible_devices("1,5,0", healthy_a100x8().gpus[:2])
    assert uuids == (gpu_uuid(1),)
    assert "'5' is not a GPU index (this node has GPUs 0-1)" in problem
    assert "every entry after it" in problem
    [r] = check_visible(with_env(h200x2(), CUDA_VISIBLE_DEVICES="1,5,0"), expect())
    assert r.status is Status.FAIL and "CUDA will expose GPU 1" in r.message


def test_uuid_prefix_and_mixed_forms_resolve_in_order():
    gpus = healthy_a100x8().gpus
    value = f"{gpu_uuid(3)[:12]},2"
    assert resolve_visible_devices(value, gpus) == ((gpu_uuid(3), gpu_uuid(2)), "")
    [r] = check_visible(with_env(healthy_a100x8(), CUDA_VISIBLE_DEVICES=value), expect())
    assert r.status is Status.PASS and "GPU 3, GPU 2" in r.message


def test_ambiguous_uuid_prefix_is_rejected():
    gpus = healthy_a100x8().gpus
    _, problem = resolve_visible_devices("GPU-", gpus)
    assert "matches 8 GPU UUIDs" in problem
    _, problem = resolve_visible_devices("GPU-ffffffff", gpus)
    assert "matches no GPU UUID" in problem


@pytest.mark.parametrize(("expected", "status"), [(None, Status.WARN), (2, Status.FAIL)])
def test_empty_value_hides_all_gpus_fail_only_when_gpus_expected(expected, status):
    facts = with_env(h200x2(), CUDA_VISIBLE_DEVICES="")
    [r] = check_visible(facts, expect(expect_gpus=expected))
    assert r.status is status and "hides every GPU" in r.message


def test_unset_passes_with_all_gpus():
    [r] = check_visible(healthy_a100x8(), expect())
    assert r.status is Status.PASS and "all 8 GPUs" in r.message


def test_indices_on_mixed_models_without_pci_order_warn():
    facts = h200x2(gpus=(make_gpu(0, A100), make_gpu(1, RTX3090)))
    results = check_visible(with_env(facts, CUDA_VISIBLE_DEVICES="1"), expect())
    assert [r.status for r in results] == [Status.PASS, Status.WARN]
    assert "PCI_BUS_ID" in results[1].fix
    fixed = with_env(facts, CUDA_VISIBLE_DEVICES="1", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    assert [r.status for r in check_visible(fixed, expect())] == [Status.PASS]


def test_set_without_nvml_is_skipped_not_judged():
    [r] = check_visible(with_env(no_driver_node(), CUDA_VISIBLE_DEVICES="0"), expect())
    assert r.status is Status.SKIP and "not checked" in r.message
