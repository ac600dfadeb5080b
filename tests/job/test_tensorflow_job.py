"""verify job --tensorflow: TensorFlow's MultiWorkerMirroredStrategy across real ranks, one
worker per rank, TF_CONFIG made from the ranks' addresses; a worker that never joins is named
and every rank leaves within --timeout (TensorFlow ignores SIGTERM while it waits). The
srun forms (SlurmClusterResolver, TF_CONFIG from the node names) are in
tests/slurm/test_tensorflow_srun.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.verify.job.tf_job import collective
from tests.support.deadlines import HANG
from tests.support.ports import free_port
from tests.support.tf_env import tf_python, tf_run_env

pytestmark = pytest.mark.slow


def left_in(cwd: Path) -> list[str]:
    """Processes still running in ``cwd`` (every rank and child of a test runs there)."""
    out = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(cwd)):
                out.append(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:120])
        except OSError:
            continue  # gone, or not ours to read
    return out


def test_two_torchrun_ranks_reduce_through_multiworker_mirrored_strategy(tmp_path):
    out = tmp_path / "r.json"
    # --skip tensorflow: each rank's node probe (another TensorFlow import) is not the subject
    p = subprocess.run([tf_python(), "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "-m", "envcheck", "verify", "job",
                        "--tensorflow", "--skip", "tensorflow", "--timeout", "90",
                        "--json", str(out)],
                       env=tf_run_env(), capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert out.exists(), p.stdout[-2000:] + p.stderr[-2000:]
    report = json.loads(out.read_text())
    results = {r["check"]: r for r in report["results"]}
    assert report["environment"]["tensorflow cluster"].startswith(
        "TF_CONFIG from the ranks' addresses: 127.0.0.1:")
    tf = results["job.allreduce.tensorflow"]
    assert tf["status"] == "pass", tf
    assert tf["message"] == "tensorflow all-reduce over 2 ranks gave the known answer 3"
    assert results["tensorflow"]["status"] == "skip"  # and its probe did not run


def test_a_worker_that_never_joins_is_named_and_every_rank_leaves_in_time(tmp_path):
    port = str(free_port())
    timeout = 20  # per step
    procs = []
    t0 = time.monotonic()
    for rank, python in ((0, tf_python()), (1, sys.executable)):  # rank 1: no TensorFlow
        env = tf_run_env(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                         LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(
            [python, "-m", "envcheck", "verify", "job", "--tensorflow", "--skip", "tensorflow",
             "--timeout", str(timeout), "--json", str(tmp_path / f"r{rank}.json")], env=env,
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    took = time.monotonic() - t0
    assert codes == [3, 3], [p.stderr.read()[-1500:] for p in procs]
    # start-up and facts, then TensorFlow's wait cut at the step's deadline: without the cut
    # rank 0 would wait for rank 1's worker for ever (and ignore SIGTERM)
    assert took < HANG, took
    report = json.loads((tmp_path / "r0.json").read_text())
    (tf,) = [r for r in report["results"] if r["check"] == "job.allreduce.tensorflow"]
    assert tf["status"] == "error"
    assert tf["message"].startswith("tensorflow all-reduce did not complete: rank 1: "
                                    "tensorflow does not import"), tf["message"]
    assert "rank 0: no answer within" in tf["message"]
    time.sleep(0.5)  # a killed child's exit reaches /proc
    assert left_in(tmp_path) == []  # no TensorFlow child left waiting


def test_every_rank_must_see_all_ranks_devices_as_replicas():
    ok = collective([(0, {"replicas": 4, "reduce": 10.0, "local": 2}),
                     (1, {"replicas": 4, "reduce": 10.0, "local": 2})], 2)
    assert not ok.error and ok.expected == 10.0
    short = collective([(0, {"replicas": 2, "reduce": 3.0, "local": 2}),
                        (1, {"replicas": 2, "reduce": 3.0, "local": 1})], 2)
    assert short.error == ("rank 0 sees 2 replica(s) where the 2 ranks' devices make 3; "
                           "rank 1 sees 2 replica(s) where the 2 ranks' devices make 3")
