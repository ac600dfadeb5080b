"""verify job --tensorflow: TensorFlow's MultiWorkerMirroredStrategy across real ranks, one
worker per rank, TF_CONFIG made from the ranks' addresses; a worker that never joins is named
and every rank leaves within --timeout (TensorFlow ignores SIGTERM while it waits)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.subprocess_cluster import linked_venv, uv_install

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tf_python(tmp_path_factory) -> str:
    """A venv that sees this environment (torch) and has tensorflow-cpu of its own; envcheck
    from this checkout on PYTHONPATH."""
    python = linked_venv(tmp_path_factory.mktemp("tfjob") / "venv")
    uv_install(python, ("tensorflow-cpu==2.21.0",))
    return python


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_torchrun_ranks_reduce_through_multiworker_mirrored_strategy(tf_python, tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([tf_python, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "-m", "envcheck", "verify", "job",
                        "--tensorflow", "--timeout", "90", "--json", str(out)],
                       env=_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.exists(), p.stdout[-2000:] + p.stderr[-2000:]
    results = {r["check"]: r for r in json.loads(out.read_text())["results"]}
    tf = results["job.allreduce.tensorflow"]
    assert tf["status"] == "pass", tf
    assert tf["message"] == "tensorflow all-reduce over 2 ranks gave the known answer 3"


def test_a_worker_without_tensorflow_is_named_and_every_rank_leaves_in_time(tf_python, tmp_path):
    port = str(_free_port())
    timeout = 30  # per step; rank 0's facts include its TensorFlow probe (seconds under load)
    procs = []
    t0 = time.monotonic()
    for rank, python in ((0, tf_python), (1, sys.executable)):  # rank 1: no TensorFlow
        env = _env(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(
            [python, "-m", "envcheck", "verify", "job", "--tensorflow", "--timeout", str(timeout),
             "--json", str(tmp_path / f"r{rank}.json")], env=env, cwd=tmp_path,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    codes = [p.wait(timeout=120) for p in procs]
    took = time.monotonic() - t0
    assert codes == [3, 3], [p.stderr.read()[-1500:] for p in procs]
    # start-up and facts, then TensorFlow's wait cut at the step's deadline: without the cut
    # rank 0 would wait for rank 1's worker for ever (and ignore SIGTERM)
    assert took < 2 * timeout + 10, took
    report = json.loads((tmp_path / "r0.json").read_text())
    (tf,) = [r for r in report["results"] if r["check"] == "job.allreduce.tensorflow"]
    assert tf["status"] == "error"
    assert tf["message"].startswith("tensorflow all-reduce did not complete: rank 1: "
                                    "tensorflow does not import"), tf["message"]
    assert "rank 0: no answer within" in tf["message"]
    left = subprocess.run(["pgrep", "-f", "MultiWorkerMirroredStrategy"], capture_output=True)
    assert left.returncode == 1  # no TensorFlow child left behind
