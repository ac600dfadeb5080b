"""verify job --tensorflow as every task of a real srun step (the session's single-node Slurm,
two fake GRES GPUs, the real tensorflow-cpu of tests/support/tf_env.py): where Slurm granted GPUs
the ranks run TensorFlow's own SlurmClusterResolver(), as a script does; without GPUs, TF_CONFIG
from the step's node names. --skip tensorflow: each rank's node probe is not the subject.
--debug: every rank prints its own outcome line, so a failed step says what each rank saw."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.tf_env import tf_python, tf_run_env

pytestmark = pytest.mark.slow


def _tf_result(slurm, tmp_path, *srun: str) -> tuple[dict, str]:
    report = tmp_path / "r.json"
    p = subprocess.run(["srun", *srun, tf_python(), "-m", "envcheck", "verify", "job",
                        "--tensorflow", "--skip", "tensorflow", "--timeout", "60",
                        "--debug", "--json", str(report)], env=tf_run_env(**slurm.env),
                       capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert report.exists(), p.stdout[-2000:] + p.stderr[-2000:]
    got = json.loads(report.read_text())
    tf = [r for r in got["results"] if r["check"] == "job.allreduce.tensorflow"]
    assert len(tf) == 1, (got["results"], p.stderr[-1500:])
    return tf[0], got["environment"]["tensorflow cluster"]


def test_srun_ranks_reduce_through_slurm_cluster_resolver_and_node_names(slurm, tmp_path):
    # the step's two GPUs: the resolver gives each task one of them and a port from the base
    resolver, how = _tf_result(slurm, tmp_path, "-n", "2", "--gres=gpu:2")
    assert (resolver["status"], resolver["message"]) == (
        "pass", "tensorflow all-reduce over 2 ranks gave the known answer 3"), resolver
    assert how.startswith("SlurmClusterResolver(port_base="), how
    # no GPU granted: TF_CONFIG from SLURM_STEP_NODELIST, the node's name resolving
    names, how = _tf_result(slurm, tmp_path, "-n", "2")
    assert names["status"] == "pass", names
    node = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    assert how.startswith(f"TF_CONFIG from SLURM_STEP_NODELIST: {node}:"), how


def test_slurm_cluster_resolver_under_gpus_per_task_fails_saying_why(slurm, tmp_path):
    # each task sees only its own GPU: the resolver counts 1 GPU for 2 tasks on the node
    tf, _ = _tf_result(slurm, tmp_path, "-n", "2", "--gpus-per-task=1")
    assert tf["status"] == "error", tf
    assert "rank 0: SlurmClusterResolver() failed: ValueError: range() arg 3 must not be " \
           "zero (it takes this task's CUDA_VISIBLE_DEVICES='0' for the node's GPUs" \
           in tf["message"], tf["message"]
