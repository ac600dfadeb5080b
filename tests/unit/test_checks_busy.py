"""Busy GPUs: foreign processes named with pid, user and MiB; ours and hidden GPUs are fine."""

from __future__ import annotations

import dataclasses

from envcheck.report import Status
from envcheck.verify.node.checks.gpu.busy import check_busy
from tests.support.factories import expect, healthy_a100x8, no_driver_node, with_env, with_process


def test_foreign_process_on_gpu_3_fails_with_pid_user_and_memory():
    facts = with_process(healthy_a100x8(), 3, pid=31337, user="bob", mib=30000)
    [r] = check_busy(facts, expect())
    assert r.status is Status.FAIL
    assert "GPU 3" in r.message and "pid 31337" in r.message
    assert "user bob" in r.message and "30000 MiB" in r.message
    assert "--allow-busy-gpus" in r.fix


def test_allow_busy_gpus_turns_it_into_a_warning():
    facts = with_process(healthy_a100x8(), 3, pid=31337, user="bob", mib=30000)
    [r] = check_busy(facts, expect(allow_busy_gpus=True))
    assert r.status is Status.WARN and "pid 31337" in r.message


def test_our_own_processes_and_known_cluster_pids_are_not_foreign():
    facts = with_process(healthy_a100x8(), 0, pid=4000, user="alice", mib=1000)  # facts.pid
    facts = with_process(facts, 1, pid=5555, user="alice", mib=1000)
    [r] = check_busy(facts, expect(known_processes=((5555, "worker tcp://h:1"),)))
    assert r.status is Status.PASS
    assert "GPU 0 pid 4000: this process" in r.message  # each of ours named
    assert "GPU 1 pid 5555: worker tcp://h:1" in r.message
    assert check_busy(facts, expect())[0].status is Status.FAIL  # 5555 unknown -> foreign


def test_a_foreign_process_is_named_by_its_command():
    facts = with_process(healthy_a100x8(), 2, pid=31337, user="bob", mib=300,
                         command="python train.py --epochs 3")
    [r] = check_busy(facts, expect())
    assert "pid 31337 (python train.py --epochs 3), user bob, 300 MiB" in r.message


def test_process_on_a_gpu_we_do_not_use_is_ignored():
    facts = with_process(healthy_a100x8(), 3, pid=31337, user="bob", mib=30000)
    [r] = check_busy(with_env(facts, CUDA_VISIBLE_DEVICES="0,1"), expect())
    assert r.status is Status.PASS and "2 visible GPU(s)" in r.message


def test_memory_used_by_unlisted_processes_warns():
    facts = healthy_a100x8()
    gpus = list(facts.gpus)
    gpus[5] = dataclasses.replace(gpus[5], memory_used_mib=40000)
    [r] = check_busy(dataclasses.replace(facts, gpus=tuple(gpus)), expect())
    assert r.status is Status.WARN and "GPU 5: 40000 MiB" in r.message


def test_no_gpu_skips():
    assert check_busy(no_driver_node(), expect())[0].status is Status.SKIP
