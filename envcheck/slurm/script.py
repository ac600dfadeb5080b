"""The sbatch script: a Dask cluster inside one allocation that verifies itself before the work.

The shape is dask-jobqueue's SLURMRunner / dask-mpi's: one allocation holds the whole cluster,
a scheduler file on shared storage is the rendezvous. The batch step (first node) runs the
scheduler, the verify client and the user's command; one `srun` step runs one worker per GPU
per node, each bound to its own GPU by `--gpus-per-task=1`. Everything started in the
background is killed by an EXIT trap: with proctrack/linuxproc Slurm does not do it.
Pure: options in, text out.

No option value becomes shell code: every user value reaches bash through `shlex.quote` (an
argument, or the single string `bash -c` runs for --then), and reaches sbatch's own #SBATCH
parser double-quoted with backslash escapes. The only expansions in the script are envcheck's
own variables (`Var`). Values with control characters never get here (options.py refuses them).
"""

from __future__ import annotations

import re
import shlex
from typing import Tuple

from envcheck.slurm.options import VERDICTS, Options
from envcheck.slurm.version import GPUS_PER_TASK, OLDEST, OVERLAP, text

Slurm = Tuple[int, int]  # the target Slurm's release (envcheck/slurm/version.py)


def _q(s: str) -> str:
    return shlex.quote(s)


class Var(str):
    """Shell text envcheck wrote itself ("$RUN_DIR/report.json"): expanded, double-quoted.
    Never built from an option value."""


def _sbatch_word(s: str) -> str:
    """One argument as sbatch's #SBATCH parser reads it: inside double quotes, with `\\` and
    `"` escaped, spaces, quotes and `#` (its comment character) stay part of the value."""
    if re.fullmatch(r"[A-Za-z0-9_.,:=@%+/-]+", s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _directives(o: Options) -> list[str]:
    lines = [
        f"--job-name={o.job_name}",
        f"--nodes={o.nodes}",
        f"--ntasks-per-node={o.gpus_per_node}",
        f"--cpus-per-task={o.cpus_per_gpu}",
        f"--gres=gpu:{o.gpus_per_node}",
    ]
    for flag, value in (("partition", o.partition), ("time", o.time), ("account", o.account)):
        if value:
            lines.append(f"--{flag}={value}")
    lines += list(o.sbatch)
    return [f"#SBATCH {_sbatch_word(line)}" for line in lines]


def _needs(o: Options, slurm: Slurm) -> str:
    """The header line naming the oldest Slurm this script runs on, and why."""
    if slurm >= OVERLAP and not o.job:
        return "# Needs Slurm >= 20.11 (srun --overlap; --gpus-per-task from 19.05)"
    if slurm >= GPUS_PER_TASK:
        return "# Needs Slurm >= 19.05 (srun --gpus-per-task)"
    return (f"# Needs Slurm >= {text(OLDEST)}: GPUs by --gres per node, one per task by "
            "SLURM_LOCALID")


def _srun(o: Options, slurm: Slurm) -> str:
    """srun's placement flags: one task per GPU, each bound to its own GPU."""
    overlap = "--overlap " if slurm >= OVERLAP and not o.job else ""
    gpus = ("--gpus-per-task=1" if slurm >= GPUS_PER_TASK
            else f"--gres=gpu:{o.gpus_per_node}")
    return f"srun {overlap}--nodes={o.nodes} --ntasks-per-node={o.gpus_per_node} {gpus}"


def _bind(slurm: Slurm) -> str:
    """Before Slurm 19.05 every task of a node sees the node's GPUs: each keeps the one of its
    node-local rank (SLURM_LOCALID). Empty where --gpus-per-task binds them."""
    if slurm >= GPUS_PER_TASK:
        return ""
    return ("bash -c 'export CUDA_VISIBLE_DEVICES=\"$(echo \"$CUDA_VISIBLE_DEVICES\" | "
            "cut -d, -f$((SLURM_LOCALID + 1)))\"; exec \"$@\"' envcheck-gpu ")


def _activate(env: str) -> str:
    if not env:
        return "# environment: the one sbatch was called from (sbatch exports it)"
    p = _q(env)
    return f"""ENVCHECK_ENV={p}
if [ -f "$ENVCHECK_ENV/bin/activate" ] && [ ! -d "$ENVCHECK_ENV/conda-meta" ]; then
    . "$ENVCHECK_ENV/bin/activate"          # a venv
else
    export CONDA_PREFIX="$ENVCHECK_ENV"      # a conda env: its bin/ first is what activation does
    export PATH="$ENVCHECK_ENV/bin:$PATH"
fi"""


def render(o: Options, slurm: Slurm) -> str:
    """The whole script for that Slurm release as text: a Dask cluster, or with ``job`` the
    launcher's own ranks."""
    return _render_job(o, slurm) if o.job else _render_dask(o, slurm)


def _then(o: Options) -> str:
    if not o.then:
        return "# no --then: the job ends with the verdict"
    allowed = " ".join(str(c) for c in VERDICTS[o.then_on])
    return f"""case " {allowed} " in
    *" $VERDICT "*)
        echo "envcheck: verify exited $VERDICT; running: "{_q(o.then)}
        bash -c {_q(o.then)}
        echo $? > "$RUN_DIR/then.rc"
        ;;
    *)
        echo "envcheck: verify exited $VERDICT (allowed: {allowed}); not running: "{_q(o.then)} >&2
        ;;
esac"""


def _preamble(o: Options, slurm: Slurm, what: str) -> str:
    """Directives, environment, the run directory, the EXIT trap that ends what was started."""
    shared = _q(o.shared_dir) if o.shared_dir else '"$SLURM_SUBMIT_DIR/.envcheck"'
    return f"""#!/bin/bash
{chr(10).join(_directives(o))}
# Written by `envcheck slurm script`: {what}
{_needs(o, slurm)}
set -u
{_activate(o.env)}
RUN_DIR={shared}/"$SLURM_JOB_ID"
mkdir -p "$RUN_DIR"
PIDS=""
cleanup() {{
    # Slurm's proctrack/linuxproc leaves background children running: end them here
    for pid in $PIDS; do kill -TERM "$pid" 2>/dev/null; done
    for _ in 1 2 3 4 5; do  # up to 1 s for them to go, no wait when they already have
        alive=""
        for pid in $PIDS; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ -z "$alive" ] && break
        sleep 0.2
    done
    for pid in $PIDS; do kill -KILL "$pid" 2>/dev/null; done
    wait 2>/dev/null
}}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() {{ echo "envcheck: $1" >&2; echo "$1" > "$RUN_DIR/failed"; exit 3; }}
"""


def _render_job(o: Options, slurm: Slurm) -> str:
    """Every task of the allocation runs `envcheck verify job`; rank 0 writes the report and
    every rank exits with the verdict, so srun's exit code is the verdict."""
    verify = [
        "envcheck", "verify", "job", "--json", Var("$RUN_DIR/report.json"),
        "--junit", Var("$RUN_DIR/report.xml"), "--timeout", f"{o.verify_timeout:g}",
    ]
    if o.lock:
        verify += ["--lock", o.lock]
    what = (f"every one of the {o.workers} tasks ({o.nodes} node(s) x {o.gpus_per_node} GPU(s))\n"
            "# runs `envcheck verify job` before anything else runs. Exit code: verify's.")
    return _preamble(o, slurm, what) + f"""
# the rendezvous's secret: every task gets it from srun's environment, no other uid can read
# it, and no process without it can join or sign a verdict (envcheck docs security)
ENVCHECK_JOB_SECRET="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n')"
export ENVCHECK_JOB_SECRET

# 1. every task checks itself and the others; srun's exit code is the verdict
{_srun(o, slurm)} \\
    --cpus-per-task={o.cpus_per_gpu} --kill-on-bad-exit=0 \\
    {_bind(slurm)}{" ".join(_sh(verify))}
VERDICT=$?
echo "$VERDICT" > "$RUN_DIR/verify.rc"

# 2. the work
{_then(o)}
exit "$VERDICT"
"""


def _render_dask(o: Options, slurm: Slurm) -> str:
    """A Dask cluster in the allocation, verified by `envcheck verify cluster`."""
    iface = ["--interface", o.interface] if o.interface else []
    sched = [
        "python", "-m", "distributed.cli.dask_scheduler",
        "--scheduler-file", Var("$SCHED_FILE"), "--protocol", o.protocol,
        # a free port, told through the scheduler file: two jobs sharing a node (or anything
        # else on 8786) would otherwise make the second scheduler fail to start
        "--port", "0", "--dashboard-address", o.dashboard, *iface,
    ]
    verify = [
        "envcheck", "verify", "cluster", "--scheduler-file", Var("$SCHED_FILE"),
        "--json", Var("$RUN_DIR/report.json"), "--junit", Var("$RUN_DIR/report.xml"),
        "--timeout", f"{o.verify_timeout:g}", "--smoke", o.smoke,
    ]
    if o.lock:
        verify += ["--lock", o.lock]
    what = (f"a Dask cluster of {o.workers} workers ({o.nodes} node(s) x {o.gpus_per_node} "
            "GPU(s)),\n# verified by `envcheck verify cluster` before anything else runs. "
            "Exit code: verify's.")
    return _preamble(o, slurm, what) + f"""SCHED_FILE="$RUN_DIR/scheduler.json"
export ENVCHECK_SCHEDULER_FILE="$SCHED_FILE"
rm -f "$SCHED_FILE"

# 1. scheduler on this (the first) node; the dashboard stays on {_q(o.dashboard)}
{" ".join(_sh(sched))} > "$RUN_DIR/scheduler.log" 2>&1 &
PIDS="$PIDS $!"
deadline=$((SECONDS + {o.wait}))
until [ -s "$SCHED_FILE" ]; do
    [ $SECONDS -ge $deadline ] && \\
        fail "scheduler did not write $SCHED_FILE within {o.wait} s (see $RUN_DIR/scheduler.log)"
    kill -0 ${{PIDS##* }} 2>/dev/null || fail "scheduler exited (see $RUN_DIR/scheduler.log)"
    sleep 0.2
done

# 2. one worker per GPU per node, each bound to its own GPU
if python -c "import dask_cuda" 2>/dev/null; then
    WORKER="dask cuda worker"          # one worker per visible GPU: here, its own one
    command -v dask-cuda-worker >/dev/null && WORKER="dask-cuda-worker"
    WORKER_ARGS=""
else
    WORKER="python -m distributed.cli.dask_worker"
    WORKER_ARGS="--nthreads {o.cpus_per_gpu} --resources GPU=1"
fi
{_srun(o, slurm)} \\
    --cpus-per-task={o.cpus_per_gpu} --kill-on-bad-exit=0 \\
    {_bind(slurm)}$WORKER --scheduler-file "$SCHED_FILE" $WORKER_ARGS {" ".join(_sh(iface))} \\
    --local-directory "${{TMPDIR:-/tmp}}" --no-dashboard --death-timeout 60 \\
    > "$RUN_DIR/workers.log" 2>&1 &
PIDS="$PIDS $!"

# 3. wait for all {o.workers} workers, with a deadline
WAIT_PY='
import sys
from distributed import Client
want, left = int(sys.argv[2]), max(float(sys.argv[3]), 1.0)
with Client(scheduler_file=sys.argv[1], timeout=left) as c:
    try:
        c.wait_for_workers(want, timeout=left)
    except Exception:
        n = len(c.scheduler_info()["workers"])
        sys.exit("only %d of %d workers registered in time (see workers.log)" % (n, want))
'
python -c "$WAIT_PY" "$SCHED_FILE" {o.workers} $((deadline - SECONDS)) 2> "$RUN_DIR/wait.log" \\
    || fail "$(tail -n 1 "$RUN_DIR/wait.log")"

# 4. verify the cluster; the verdict decides whether the work runs
{" ".join(_sh(verify))}
VERDICT=$?
echo "$VERDICT" > "$RUN_DIR/verify.rc"

# 5. the work
{_then(o)}
exit "$VERDICT"
"""


def _sh(words: list[str]) -> list[str]:
    """Each word as one bash word: envcheck's own `Var`s expand (inside double quotes), every
    other word is quoted whole, so a `$(...)`, backtick or `;` in a value is inert text."""
    return [f'"{w}"' if isinstance(w, Var) else _q(w) for w in words]
