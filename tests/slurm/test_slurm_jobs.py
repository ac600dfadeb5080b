"""`envcheck slurm script --submit` against a real Slurm (munge + slurmctld + slurmd, two fake
GRES GPUs): the generated job starts its cluster, verifies it, runs --then, leaves nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from envcheck.slurm.submit import submit
from tests.slurm.cluster import Slurm

THEN = (
    "python -c \"import os; from distributed import Client; "
    "c = Client(scheduler_file=os.environ['ENVCHECK_SCHEDULER_FILE']); "
    "print(sorted(str(w['name']) for w in c.scheduler_info()['workers'].values()))\" "
    "> then.out"
)


def envcheck(slurm: Slurm, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        cwd=cwd, env=slurm.env, capture_output=True, text=True, timeout=180,
    )


def left_running(job: str, conf: str) -> list[str]:
    """Processes (not zombies) that still carry the job's SLURM_JOB_ID (and this Slurm's
    SLURM_CONF, which sbatch exported into the job: another Slurm's job 1 is not ours)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
        except OSError:
            continue
        ours = f"SLURM_JOB_ID={job}".encode() in env and f"SLURM_CONF={conf}".encode() in env
        if ours and state not in ("Z", "X"):
            out.append(f"{d.name} {cmd}")
    return out


def test_generated_job_binds_workers_verifies_runs_then_and_cleans_up(slurm, tmp_path):
    p = envcheck(
        slurm, tmp_path, "slurm", "script", "--gpus-per-node", "2", "--env", sys.prefix,
        "--smoke", "submit", "--then", THEN, "--submit", "--json", "report.json",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "pass"
    results = {r["check"]: r for r in report["results"] if r["group"] == "slurm"}
    assert results["slurm.gpu-binding"]["status"] == "pass"
    assert "(GPU 0, 1); none shared, none idle" in results["slurm.gpu-binding"]["message"]
    assert results["slurm.nodes"]["status"] == "pass"
    job = report["environment"]["slurm job"].split()[0]
    # --then ran inside the job, with the verified cluster still up
    assert len(eval((tmp_path / "then.out").read_text())) == 2  # noqa: S307 - our own list
    assert "ran, exit 0" in report["environment"]["--then"]
    assert left_running(job, str(slurm.conf)) == []
    # the submission is timed (a measurement: in the JSON; the terminal shows it with --bench)
    assert "sbatch to verdict" in [m["name"] for m in report["measurements"]]


def test_more_gpus_than_the_node_has_surfaces_slurms_refusal(slurm, tmp_path):
    p = envcheck(slurm, tmp_path, "slurm", "script", "--gpus-per-node", "4", "--submit")
    assert p.returncode == 4
    assert "sbatch refused the job" in p.stderr
    assert "Requested node configuration is not available" in p.stderr
    assert "Traceback" not in p.stderr


def test_worker_started_without_gres_is_caught(slurm, tmp_path, monkeypatch):
    """One worker bound with --gres=gpu:1, one started by a bare srun: it gets both GPUs."""
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    monkeypatch.chdir(tmp_path)
    py = sys.executable
    script = textwrap.dedent(f"""\
        #!/bin/bash
        #SBATCH --gres=gpu:2
        #SBATCH --ntasks=2
        RUN_DIR={tmp_path}/$SLURM_JOB_ID
        mkdir -p $RUN_DIR
        S=$RUN_DIR/scheduler.json
        {py} -m distributed.cli.dask_scheduler --scheduler-file $S \\
            --dashboard-address 127.0.0.1:0 > $RUN_DIR/scheduler.log 2>&1 &
        PIDS=$!
        trap 'kill $PIDS 2>/dev/null; wait' EXIT
        until [ -s $S ]; do sleep 0.1; done
        W="{py} -m distributed.cli.dask_worker --scheduler-file $S --nthreads 1 --no-dashboard"
        srun --overlap -n1 --gres=gpu:1 $W --name bound > $RUN_DIR/w1.log 2>&1 &
        PIDS="$PIDS $!"
        srun --overlap -n1 $W --name unbound > $RUN_DIR/w2.log 2>&1 &
        PIDS="$PIDS $!"
        {py} -c "import distributed as d; d.Client(scheduler_file='$S').wait_for_workers(2, 60)"
        {py} -m envcheck verify cluster --scheduler-file $S --smoke none --quiet \\
            --json $RUN_DIR/report.json
        """)
    report = submit(script, tmp_path, timeout=120)
    slurm_results = [r for r in report.results if r.group == "slurm"]
    shared = [r for r in slurm_results if r.check == "slurm.gpu-shared"]
    assert shared and shared[0].status.value == "fail", slurm_results
    assert "started without --gres/--gpus-per-task" in shared[0].message
    idle = [r for r in slurm_results if r.check == "slurm.gpu-idle"]
    assert idle and "holds GPU 1" in idle[0].message
    assert int(report.exit_code) == 2
    job = report.environment["slurm job"].split()[0]
    assert left_running(job, str(slurm.conf)) == []


def test_job_that_can_never_start_is_cancelled_with_slurms_reason(slurm, tmp_path):
    # 2 GPUs fit, 2 x 8 CPUs do not: Slurm accepts the job and leaves it pending for ever
    p = envcheck(slurm, tmp_path, "slurm", "script", "--gpus-per-node", "2",
                 "--cpus-per-gpu", "8", "--submit")
    assert p.returncode == 4, p.stderr
    assert "can never start" in p.stderr and "PartitionConfig" in p.stderr
    job = p.stderr.split("job ", 1)[1].split()[0]
    assert "JobState=CANCELLED" in slurm.run("scontrol", "show", "job", "-o", job)


def test_hostile_sbatch_values_reach_slurm_verbatim_as_one_option_each(slurm, tmp_path):
    """sbatch's own #SBATCH parser reads the quoted values back whole: spaces, quotes, `#`
    and backslashes stay in the job name and comment, and start no other option."""
    name = "a b 'c' \"d\" # e \\ $(touch pwned) --hold"
    comment = "x --partition=nope # y \"z\""
    script = envcheck(slurm, tmp_path, "slurm", "script", "--job-name", name,
                      f"--sbatch=--comment={comment}", "--sbatch=--hold")
    assert script.returncode == 0, script.stderr
    sub = subprocess.run(["sbatch", "--parsable"], input=script.stdout, cwd=tmp_path,
                         env=slurm.env, capture_output=True, text=True, timeout=60)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    try:
        fields = slurm.run("squeue", "-h", "-j", job, "-o", "%j|%k|%P|%T").rstrip("\n")
    finally:
        slurm.run("scancel", job, check=False)
    assert fields == f"{name}|{comment}|debug|PENDING"
    assert not (tmp_path / "pwned").exists()


def test_job_mode_verifies_every_task_then_runs_the_work(slurm, tmp_path):
    # no Dask cluster: srun's two tasks run verify job, each on the GPU Slurm bound it to
    p = envcheck(
        slurm, tmp_path, "slurm", "script", "--job", "--gpus-per-node", "2", "--env", sys.prefix,
        "--then", "echo work ran > then.out", "--submit", "--json", "report.json",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    got = {r["check"]: r for r in report["results"]}
    assert got["job.ranks"]["message"].startswith("2 of 2 ranks reported (slurm)")
    assert got["job.slurm.gpu-binding"]["status"] == "pass"
    assert (tmp_path / "then.out").read_text() == "work ran\n"
    job = report["environment"]["slurm job"].split()[0]
    assert left_running(job, str(slurm.conf)) == []
