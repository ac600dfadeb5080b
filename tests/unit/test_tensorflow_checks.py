"""The TensorFlow probe's parsing and the tensorflow node check, on facts built here; the probe
itself runs against a real tensorflow-cpu in tests/job/test_tensorflow.py."""

from __future__ import annotations

import dataclasses
import json

from envcheck.report import Status
from envcheck.verify.facts.model import KernelDriver, ProcGpu, TensorFlowFacts
from envcheck.verify.facts.tfprobe import parse_tensorflow_lines
from envcheck.verify.node.checks.env.tensorflow import check_tensorflow
from tests.support.factories import H200, expect, no_driver_node, node

HEAD = {"version": "2.21.0", "cuda_build": True, "cuda": "12.5.1", "cudnn": "9", "gpus": 2}


def _lines(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_the_childs_lines_become_facts_and_a_silent_stop_is_named():
    tf = parse_tensorflow_lines(_lines(HEAD, {"replicas": 2, "reduce": 3.0,
                                              "logical_cpus": 0}))
    assert (tf.version, tf.cuda, tf.gpus, tf.replicas, tf.reduce) == ("2.21.0", "12.5.1", 2, 2, 3.0)
    hung = parse_tensorflow_lines(_lines(HEAD) + "W0000 a log line\n",
                                  "the probe timed out after 60 s")
    assert hung.error == "MirroredStrategy gave no answer: the probe timed out after 60 s"
    broken = parse_tensorflow_lines(_lines({"error": "tensorflow does not import: ImportError: x"}))
    assert broken.present and not broken.version


def _gpu_node(**tf: object):
    return node(2, H200, driver="580.95.05", cuda_driver="12.8", tensorflow=TensorFlowFacts(**{
        **{k: v for k, v in HEAD.items()}, "replicas": 2, "reduce": 3.0, **tf}))


def test_a_build_that_spans_every_gpu_passes():
    (ok,) = check_tensorflow(_gpu_node(), expect())
    assert ok.status is Status.PASS
    assert ok.message == ("TensorFlow 2.21.0 (CUDA 12.5.1 build): MirroredStrategy over 2 GPU(s), "
                          "cross-replica sum 3")


def test_a_strategy_silently_on_one_replica_fails_naming_both_counts():
    results = check_tensorflow(_gpu_node(gpus=0, replicas=1, reduce=1.0), expect())
    messages = [r.message for r in results if r.status is Status.FAIL]
    assert any("lists 0 of the 2 visible GPU(s)" in m for m in messages)
    assert any("MirroredStrategy has 1 replica(s) where 2 GPU(s) are visible" in m
               for m in messages)


def test_a_build_for_a_newer_cuda_than_the_driver_and_a_cpu_build_on_gpus_fail():
    newer = check_tensorflow(dataclasses.replace(_gpu_node(), cuda_driver_version="12.2"),
                             expect())
    assert any("needs CUDA 12.5.1; the driver supports CUDA 12.2" in r.message for r in newer)
    cpu = check_tensorflow(_gpu_node(cuda_build=False, cuda="", gpus=0, replicas=1,
                                     reduce=1.0), expect())
    (first, *_) = [r for r in cpu if r.status is Status.FAIL]
    assert "CPU build) on a node with 2 visible GPU(s)" in first.message
    assert "tensorflow[and-cuda]" in first.fix


def test_on_a_cpu_machine_the_logical_devices_are_the_replicas_and_absence_skips():
    cpu = no_driver_node(tensorflow=TensorFlowFacts(
        version="2.21.0", gpus=0, replicas=2, reduce=3.0, logical_cpus=2))
    (ok,) = check_tensorflow(cpu, expect())
    assert ok.status is Status.PASS and "over 2 logical CPU device(s)" in ok.message
    wrong = dataclasses.replace(cpu, tensorflow=dataclasses.replace(cpu.tensorflow, reduce=2.0))
    (bad,) = check_tensorflow(wrong, expect())
    assert bad.status is Status.FAIL and "gave 2.0, expected 3" in bad.message
    one = dataclasses.replace(cpu, tensorflow=dataclasses.replace(
        cpu.tensorflow, replicas=1, reduce=1.0))
    (few,) = check_tensorflow(one, expect())
    assert few.status is Status.FAIL
    assert "MirroredStrategy has 1 replica(s) where 2 logical CPU device(s)" in few.message
    (skip,) = check_tensorflow(no_driver_node(), expect())
    assert skip.status is Status.SKIP and skip.message == "not installed: TensorFlow"


def test_without_nvml_the_kernel_drivers_gpus_and_version_are_what_tensorflow_must_meet():
    # NVML unusable in the env (no nvidia-ml-py): /proc lists 2 GPUs of a 535 driver (CUDA
    # 12.2 by the release notes' table); a CUDA 12.5 build listing none, on one replica
    gpus = tuple(ProcGpu(f"0000:00:0{i}.0", "NVIDIA H100 80GB HBM3", f"GPU-{i}aaa", i)
                 for i in (6, 7))
    facts = dataclasses.replace(no_driver_node(tensorflow=TensorFlowFacts(
        **{**HEAD, "gpus": 0}, replicas=1, reduce=1.0)),
        kernel_driver=KernelDriver(version="535.104.05", gpus=gpus))
    messages = [r.message for r in check_tensorflow(facts, expect())]
    assert any("needs CUDA 12.5.1; the driver supports CUDA 12.2 at most" in m
               for m in messages), messages
    assert any("lists 0 of the 2 visible GPU(s)" in m for m in messages)
    assert any("has 1 replica(s) where 2 GPU(s) are visible" in m for m in messages)
    one = dataclasses.replace(facts, env={"CUDA_VISIBLE_DEVICES": "1"})
    assert not any("where 2" in r.message for r in check_tensorflow(one, expect()))
