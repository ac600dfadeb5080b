"""`envcheck slurm script` without --submit: the script it prints (checked by bash -n)."""

from __future__ import annotations

import subprocess

import pytest

from envcheck.cli import main


def script(capsys, *args: str) -> str:
    assert main(["slurm", "script", *args]) == 0
    return capsys.readouterr().out


def test_directives_workers_and_then_follow_the_flags(capsys, tmp_path):
    text = script(capsys, "--nodes", "2", "--gpus-per-node", "4", "--partition", "gpu",
                  "--time", "1:00:00", "--account", "ml", "--sbatch=--constraint=a100",
                  "--then", "python train.py --lr 'a b'", "--then-on", "pass")
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
