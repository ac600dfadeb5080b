"""Slurm: time from `sbatch` to a verdict, against the same job doing only its bare work.

On a real single-node Slurm (tests/slurm/cluster.py: munge + slurmctld + slurmd, 2 fake GRES
GPUs), 1 node x 2 workers, in the same run, interleaved, --repeat times each:

- bare: an sbatch script that starts the scheduler and `srun --gpus-per-task=1` workers exactly
  as the generated script does, waits for both, runs one task and exits;
- verified: `envcheck slurm script --gpus-per-node 2 --smoke submit --submit` (the generated
  script: scheduler, workers, wait, verify cluster with the per-worker task, Slurm checks);
- verified, default smoke: the same with every smoke test that applies (dask.array, xgboost,
  torch DDP on these CPU workers), once.

Each time runs from sbatch until `scontrol` reports the job ended. Prints medians and the
ratio verified / bare.

    sudo python bench/slurm.py [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envcheck.slurm.submit import sbatch, wait  # noqa: E402
from tests.slurm.cluster import single_node_slurm  # noqa: E402

BARE = """#!/bin/bash
#SBATCH --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --gres=gpu:2
S={dir}/$SLURM_JOB_ID.json
{py} -m distributed.cli.dask_scheduler --scheduler-file $S --dashboard-address 127.0.0.1:0 \\
    > /dev/null 2>&1 &
PIDS=$!
trap 'kill $PIDS 2>/dev/null; wait' EXIT
until [ -s $S ]; do sleep 0.2; done
srun --overlap --nodes=1 --ntasks-per-node=2 --gpus-per-task=1 --cpus-per-task=1 \\
    {py} -m distributed.cli.dask_worker --scheduler-file $S --nthreads 1 --resources GPU=1 \\
    --no-dashboard > /dev/null 2>&1 &
PIDS="$PIDS $!"
{py} -c "
import distributed as d
c = d.Client(scheduler_file='$S'); c.wait_for_workers(2, timeout=120)
assert c.submit(sum, [1, 2]).result() == 3
"
"""


def bare(directory: Path) -> float:
    t0 = time.monotonic()
    job = sbatch(
        BARE.format(dir=directory, py=sys.executable), str(directory / "bare-%j.out"), directory
    )
    fields, _ = wait(job, 300)
    assert fields["ExitCode"] == "0:0", fields
    return time.monotonic() - t0


def verified(directory: Path, smoke: str) -> float:
    t0 = time.monotonic()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "envcheck",
            "slurm",
            "script",
            "--gpus-per-node",
            "2",
            "--env",
            sys.prefix,
            "--smoke",
            smoke,
            "--submit",
            "--quiet",
            "--shared-dir",
            str(directory / "verified"),
        ],
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with single_node_slurm(gpus=2) as slurm:
        os.environ["SLURM_CONF"] = str(slurm.conf)
        directory = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
        bare(directory)  # warm the page cache for both
        times: dict[str, list[float]] = {"bare": [], "verified (smoke submit)": []}
        for _ in range(args.repeat):
            times["bare"].append(bare(directory))
            times["verified (smoke submit)"].append(verified(directory, "submit"))
        times["verified (smoke all)"] = [verified(directory, "all")]
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:28s} median {med[k]:6.2f} s  runs {', '.join(f'{x:.2f}' for x in v)}")
    base = med["bare"]
    for k in ("verified (smoke submit)", "verified (smoke all)"):
        print(f"ratio {k} / bare: {med[k] / base:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"runs": times, "median": med}, indent=2))


if __name__ == "__main__":
    main()
