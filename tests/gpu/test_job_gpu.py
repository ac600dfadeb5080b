"""verify job on real GPUs (run on the device machine): torchrun ranks with NCCL.

    python -m pytest -q tests/gpu/test_job_gpu.py

One GPU: one rank passes, the NCCL all-reduce included. Two GPUs: two ranks pass, each on its
own GPU; two ranks forced onto one GPU (CUDA_VISIBLE_DEVICES=0 for both) fail the binding.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _gpu_count

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

BIN = Path(sys.executable).parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(tmp_path: Path, n: int, env: dict | None = None) -> tuple[int, dict]:
    report = tmp_path / "r.json"
    p = subprocess.run(
        [str(BIN / "torchrun"), "--nproc-per-node", str(n), "--master-port", str(_port()),
         "-m", "envcheck", "verify", "job", "--timeout", "120", "--json", str(report)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )
    assert report.exists(), p.stdout[-3000:] + p.stderr[-3000:]
    got = json.loads(report.read_text())
    # torchrun exits 1 for any failed rank: the verdict's own code is rank 0's report's
    assert (p.returncode == 0) == (got["exit_code"] == 0), (p.returncode, got["exit_code"])
    return got["exit_code"], got


def _checks(report: dict) -> dict[str, dict]:
    return {r["check"]: r for r in report["results"]}


def test_one_rank_on_one_gpu_passes_with_nccl(tmp_path):
    code, report = _torchrun(tmp_path, 1, {"CUDA_VISIBLE_DEVICES": "0"})
    got = _checks(report)
    assert got["job.gpu-binding"]["status"] == "pass", report["results"]
    assert got["job.kernel"]["status"] == "pass"
    assert got["job.allreduce.nccl"]["status"] == "pass"
    assert code in (0, 1), report["results"]  # warnings (idle GPUs on the host) allowed


def test_two_ranks_on_two_gpus_pass(tmp_path):
    if _gpu_count() < 2:
        pytest.skip("needs two GPUs")
    code, report = _torchrun(tmp_path, 2, {"CUDA_VISIBLE_DEVICES": "0,1"})
    got = _checks(report)
    assert got["job.gpu-binding"]["status"] == "pass", report["results"]
    assert "2 ranks, each on its own GPU" in got["job.gpu-binding"]["message"]
    assert got["job.allreduce.nccl"]["status"] == "pass"
    assert code in (0, 1), report["results"]


def test_two_ranks_forced_onto_one_gpu_fail_binding(tmp_path):
    if _gpu_count() < 2:
        pytest.skip("needs two GPUs")
    code, report = _torchrun(tmp_path, 2, {"CUDA_VISIBLE_DEVICES": "0"})
    failed = {r["check"] for r in report["results"] if r["status"] == "fail"}
    assert code == 2
    assert "job.gpu-binding.shared" in failed, report["results"]
