"""`verify cluster --jobqueue slurm --workers N`: dask-jobqueue submits one Slurm job per
worker to the real Slurm; envcheck verifies them and the jobs end with the cluster."""

from __future__ import annotations

import json
import sys
import time

import pytest

from tests.slurm.test_slurm_jobs import envcheck

pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is in the test extras")


def test_jobqueue_workers_each_get_their_own_gres_gpu_and_leave_no_job(slurm, tmp_path):
    p = envcheck(
        slurm, tmp_path, "verify", "cluster", "--jobqueue", "slurm", "--workers", "2",
        "--jobqueue-option", f"python={sys.executable}",
        "--jobqueue-option", f"log_directory={tmp_path}",
        "--smoke", "submit", "--timeout", "60", "--json", "report.json", "--quiet",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    results = {r["check"]: r for r in report["results"] if r["group"] == "slurm"}
    assert results["slurm.job"]["message"].startswith("2 workers in Slurm jobs ")
    assert "(GPU 0, 1); none shared, none idle" in results["slurm.gpu-binding"]["message"]
    assert "dask-jobqueue SLURMCluster" in report["environment"]["cluster"]
    # closing the cluster cancelled its jobs (scancel is asynchronous: give Slurm a moment)
    deadline = time.monotonic() + 20
    while slurm.run("squeue", "-h").strip() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert slurm.run("squeue", "-h").strip() == ""


def test_jobqueue_without_workers_or_with_an_address_is_bad_input(capsys):
    from envcheck.cli import main

    assert main(["verify", "cluster", "--jobqueue", "slurm"]) == 4
    assert "--jobqueue needs --workers N" in capsys.readouterr().err
    assert main(["verify", "cluster", "tcp://127.0.0.1:1", "--jobqueue", "slurm"]) == 4
    assert "needs no address" in capsys.readouterr().err
