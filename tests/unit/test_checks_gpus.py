"""GPU count / model / memory and compute capability, judged on visible GPUs."""

from __future__ import annotations

from envcheck.report import Status
from envcheck.verify.node.checks.gpu.gpus import check_compute_capability, check_gpus
from tests.support.factories import V100, expect, healthy_a100x8, no_driver_node, node, with_env


def test_healthy_a100x8_meets_count_model_memory():
    [r] = check_gpus(
        healthy_a100x8(), expect(expect_gpus=8, expect_gpu_model="a100", min_memory_mib=80 * 1024)
    )
    assert r.status is Status.PASS
    assert "8x NVIDIA A100-SXM4-80GB (81920 MiB)" in r.message


def test_count_is_what_cuda_visible_devices_leaves():
    facts = with_env(healthy_a100x8(), CUDA_VISIBLE_DEVICES="0,1")
    [r] = check_gpus(facts, expect(expect_gpus=8))
    assert r.status is Status.FAIL
    assert "a job sees 2" in r.message and "CUDA_VISIBLE_DEVICES hides 6 of 8" in r.message


def test_wrong_model_and_small_memory_are_named_per_gpu():
    [r] = check_gpus(node(2, V100), expect(expect_gpu_model="A100", min_memory_mib=40 * 1024))
    assert r.status is Status.FAIL
    assert "GPU 0 Tesla V100-SXM2-32GB" in r.message and "GPU 1 32768 MiB" in r.message


def test_expected_gpus_on_a_machine_without_driver_fail_clearly():
    [r] = check_gpus(no_driver_node(), expect(expect_gpus=2))
    assert r.status is Status.FAIL
    assert "expected 2 GPU(s) but NVML sees none" in r.message


def test_no_driver_and_no_expectation_skips():
    [r] = check_gpus(no_driver_node(), expect())
    assert r.status is Status.SKIP


def test_cuda_13_environment_on_volta_fails_compute_capability():
    [r] = check_compute_capability(node(4, V100), expect(cuda="13.0"))
    assert r.status is Status.FAIL
    assert "sm_70" in r.message and "7.5" in r.message


def test_compute_capability_flag_and_pass():
    [ok] = check_compute_capability(healthy_a100x8(), expect(min_compute_capability=(7, 0)))
    assert ok.status is Status.PASS and "8.0" in ok.message
    [bad] = check_compute_capability(healthy_a100x8(), expect(min_compute_capability=(9, 0)))
    assert bad.status is Status.FAIL


def test_compute_capability_without_minimum_skips():
    [r] = check_compute_capability(healthy_a100x8(), expect())
    assert r.status is Status.SKIP


def test_mig_instances_in_cuda_visible_devices_count_as_devices():
    mig = "MIG-1f6d5b1e-1111-2222-3333-444444444444"
    facts = with_env(healthy_a100x8(), CUDA_VISIBLE_DEVICES=mig)
    [r] = check_gpus(facts, expect(expect_gpus=1))
    assert r.status is Status.PASS and "1 MIG instance(s), not inspected" in r.message
    assert check_gpus(facts, expect(expect_gpus=2))[0].status is Status.FAIL


def test_memory_other_processes_hold_counts_against_min_gpu_memory():
    import dataclasses

    from envcheck.verify.facts import GpuProcess
    from tests.support.factories import make_gpu

    base = healthy_a100x8()
    busy = make_gpu(3, processes=(GpuProcess(4242, 70 * 1024, "bob"),))
    facts = dataclasses.replace(base, gpus=tuple(busy if g.index == 3 else g for g in base.gpus))
    [r] = check_gpus(facts, expect(min_memory_mib=40 * 1024))
    assert r.status is Status.FAIL
    assert "GPU 3 71680 MiB (pid 4242; 10240 MiB left)" in r.message
    # this process's own allocation (or a --known pid) is not another's
    [r] = check_gpus(dataclasses.replace(facts, own_pids=(4242,)),
                     expect(min_memory_mib=40 * 1024))
    assert r.status is Status.PASS
