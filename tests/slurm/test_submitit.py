"""envcheck.verify_job() as a submitit job's function, on the session's real Slurm (two fake
GRES GPUs): submitit's SlurmExecutor submits with sbatch, its tasks run under srun, each calls
the API and returns its Report's verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

submitit = pytest.importorskip("submitit")


def _tasks(slurm, monkeypatch, folder: Path, **params) -> list[tuple[int, list]]:
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))

    def preflight() -> tuple[int, list]:  # nested: shipped by value, runs in every task
        import envcheck

        report = envcheck.verify_job(timeout=60)
        return int(report.exit_code), [
            (r.check, r.status.value, r.node, r.message) for r in report.results]

    executor = submitit.SlurmExecutor(folder=folder, python=sys.executable)
    executor.update_parameters(nodes=1, ntasks_per_node=2, time=5, cpus_per_task=1, **params)
    job = executor.submit(preflight)
    return job.results()


def test_a_two_task_submitit_job_passes_and_its_ranks_agree(slurm, monkeypatch, tmp_path):
    (code0, rank0), (code1, rank1) = _tasks(slurm, monkeypatch, tmp_path / "sub",
                                            additional_parameters={"gpus-per-task": 1})
    assert code0 == 0 and code1 == 0, rank0
    got = {check: (status, message) for check, status, _, message in rank0}
    assert got["job.ranks"][1].startswith("2 of 2 ranks reported (slurm)")
    assert got["job.launcher"] == ("pass", "slurm and submitit agree on every rank")
    assert got["job.slurm.gpu-binding"][0] == "pass"
    assert [(c, s) for c, s, _, _ in rank1] == [("job.ranks.verdict", "pass")]


def test_submitit_tasks_sharing_the_jobs_gpus_fail_naming_them(slurm, monkeypatch, tmp_path):
    # the job's two GPUs for both tasks, no per-task binding: both compute on GPU 0
    (code0, rank0), (code1, rank1) = _tasks(slurm, monkeypatch, tmp_path / "sub",
                                            gpus_per_node=2)
    assert code0 == 2 and code1 == 2
    failed = [(c, node, m) for c, s, node, m in rank0 if s == "fail"]
    assert any(c == "job.slurm.gpu-shared" for c, _, _ in failed), failed
    assert rank1[0][1] == "fail"
