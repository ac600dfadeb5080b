"""verify job as every task of a real srun step (the session's single-node Slurm, two fake
GRES GPUs): Slurm's rank variables, the master derived from the step's nodelist, Slurm's GPU
binding judged per node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ENVCHECK = str(Path(sys.executable).parent / "envcheck")


def _run(slurm, tmp_path, *srun: str) -> tuple[int, dict]:
    report = tmp_path / "r.json"
    p = subprocess.run(["srun", *srun, ENVCHECK, "verify", "job", "--timeout", "60",
                        "--json", str(report)],
                       env=slurm.env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert report.exists(), p.stdout[-2000:] + p.stderr[-2000:]
    return p.returncode, json.loads(report.read_text())


def test_srun_two_tasks_each_on_its_own_gpu_pass(slurm, tmp_path):
    code, report = _run(slurm, tmp_path, "-n", "2", "--gpus-per-task=1")
    got = {r["check"]: r for r in report["results"]}
    assert code == 0, report["results"]
    assert got["job.ranks"]["message"].startswith("2 of 2 ranks reported (slurm)")
    assert got["job.slurm.gpu-binding"]["status"] == "pass"
    assert "each on its own GPU Slurm granted it" in got["job.slurm.gpu-binding"]["message"]


def test_srun_two_tasks_sharing_the_step_gpus_fail_binding(slurm, tmp_path):
    # --gres=gpu:2 for the step, no per-task binding: both ranks compute on GPU 0
    code, report = _run(slurm, tmp_path, "-n", "2", "--gres=gpu:2")
    failed = [r for r in report["results"] if r["status"] == "fail"]
    assert code == 2
    assert "job.slurm.gpu-shared" in {r["check"] for r in failed}, failed
