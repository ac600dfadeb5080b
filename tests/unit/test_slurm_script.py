"""`envcheck slurm script` without --submit: the script it prints (checked by bash -n)."""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from envcheck.cli import main
from envcheck.slurm.options import Options
from envcheck.slurm.script import render


def script(capsys, *args: str) -> str:
    assert main(["slurm", "script", *args]) == 0
    return capsys.readouterr().out


def test_directives_workers_and_then_follow_the_flags(capsys, tmp_path):
    text = script(capsys, "--nodes", "2", "--gpus-per-node", "4", "--partition", "gpu",
                  "--time", "1:00:00", "--account", "ml", "--sbatch=--constraint=a100",
                  "--then", "python train.py --lr 'a b'", "--then-on", "pass",
                  "--slurm-version", "20.11")
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4", "#SBATCH --gres=gpu:4",
                 "#SBATCH --partition=gpu", "#SBATCH --time=1:00:00", "#SBATCH --account=ml",
                 "#SBATCH --constraint=a100"):
        assert line in text.splitlines()
    assert "srun --overlap --nodes=2 --ntasks-per-node=4 --gpus-per-task=1" in text
    assert "--dashboard-address 127.0.0.1:0" in text
    assert 'case " 0 " in' in text  # --then-on pass: only a clean verdict runs the work
    assert "trap cleanup EXIT" in text
    path = tmp_path / "job.sh"
    path.write_text(text)
    subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--gpus-per-node", "0"], "--gpus-per-node 0: must be more than 0"),
        (["--time", "soon"], "--time 'soon'"),
        (["--env", "/nonexistent/env"], "not an environment prefix"),
        (["--sbatch", "constraint=a100"], "give an sbatch option"),
        (["--submit-timeout", "5"], "--submit-timeout needs --submit"),
    ],
)
def test_bad_flags_are_one_line_exit_4(capsys, args, said):
    assert main(["slurm", "script", *args]) == 4
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_the_job_script_exports_a_fresh_secret_to_its_tasks(capsys, tmp_path):
    text = script(capsys, "--job", "--nodes", "2")
    lines = text.splitlines()
    made = next(i for i, line in enumerate(lines) if line.startswith("ENVCHECK_JOB_SECRET="))
    assert lines[made + 1] == "export ENVCHECK_JOB_SECRET"
    assert made < next(i for i, line in enumerate(lines) if line.startswith("srun "))
    shell = "\n".join(lines[made:made + 2]) + '\necho "$ENVCHECK_JOB_SECRET"'
    one, two = (subprocess.run(["bash", "-c", shell], capture_output=True, text=True,
                               check=True).stdout.strip() for _ in range(2))
    assert len(one) == 64 and int(one, 16) >= 0 and one != two


@pytest.mark.parametrize(("version", "srun", "needs"), [
    ("23.02", "srun --overlap --nodes=2 --ntasks-per-node=4 --gpus-per-task=1", "20.11"),
    ("20.02", "srun --nodes=2 --ntasks-per-node=4 --gpus-per-task=1", "19.05"),
    ("17.11", "srun --nodes=2 --ntasks-per-node=4 --gres=gpu:4", "17.11"),
])
def test_the_script_fits_the_target_slurm_and_says_which(capsys, tmp_path, version, srun,
                                                         needs):
    text = script(capsys, "--nodes", "2", "--gpus-per-node", "4", "--slurm-version", version)
    assert srun + " \\" in text.splitlines()
    assert f"# Needs Slurm >= {needs}" in text
    assert ("--overlap" in text) is (version >= "20.11")
    assert ("--gpus-per-task" in text) is (version >= "19.05")
    path = tmp_path / "job.sh"
    path.write_text(text)
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_before_19_05_each_task_keeps_the_gpu_of_its_local_rank(capsys):
    text = script(capsys, "--job", "--gpus-per-node", "4", "--slurm-version", "18.08")
    bind = next(line for line in text.splitlines() if "envcheck-gpu" in line).strip()
    bind = bind[: bind.index("envcheck-gpu")] + "envcheck-gpu sh -c 'echo $CUDA_VISIBLE_DEVICES'"
    for rank, gpu in ((0, "4"), (2, "6")):
        env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "4,5,6,7",
               "SLURM_LOCALID": str(rank)}
        out = subprocess.run(["bash", "-c", bind], env=env, capture_output=True, text=True,
                             check=True).stdout
        assert out.strip() == gpu


def test_no_sinfo_answer_means_the_oldest_script(capsys, monkeypatch, tmp_path):
    (tmp_path / "sinfo").write_text("#!/bin/sh\necho 'sinfo: fatal: no config' >&2\nexit 1\n")
    (tmp_path / "sinfo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert "# Needs Slurm >= 17.11" in script(capsys)
    (tmp_path / "sinfo").write_text("#!/bin/sh\necho 'slurm 23.02.7'\n")
    assert "srun --overlap" in script(capsys)


def test_a_slurm_version_older_than_17_11_is_refused(capsys):
    assert main(["slurm", "script", "--slurm-version", "16.05"]) == 4
    assert "17.11" in capsys.readouterr().err


def test_built_options_hold_what_the_script_renders(tmp_path, monkeypatch):
    """One Options serves flags, keywords and the renderer: once built, the job name default
    is filled in and the paths are absolute; building it again changes nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "env" / "bin").mkdir(parents=True)
    dask = Options(env="env", shared_dir="runs")
    assert (dask.job_name, dask.env, dask.shared_dir) == (
        "envcheck-dask", str(tmp_path / "env"), str(tmp_path / "runs"))
    job = Options(job=True, submit=True)
    assert (job.job_name, job.shared_dir) == ("envcheck-job", str(tmp_path / ".envcheck"))
    assert Options().shared_dir == ""  # the script's $SLURM_SUBMIT_DIR/.envcheck
    assert dataclasses.replace(dask) == dask and dataclasses.replace(job) == job
    assert '#SBATCH --job-name=envcheck-job' in render(job, (23, 2)).splitlines()
