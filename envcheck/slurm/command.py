"""`envcheck slurm script`: print (or --submit) an sbatch script whose Dask cluster verifies
itself before the work runs. docs/slurm.md has the script's anatomy."""

from __future__ import annotations

import argparse
import os
import re
import unicodedata
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.flags import seconds
from envcheck.inputs import check_regular
from envcheck.report import Report, Result, Status
from envcheck.slurm.script import DEFAULT_WAIT, VERDICTS, ScriptOptions, render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--nodes", type=_count, default=1, metavar="N", help="nodes (default 1)")
    a("--gpus-per-node", type=_count, default=1, metavar="G", help="GPUs and workers per node")
    a("--cpus-per-gpu", type=_count, default=1, metavar="C", help="CPUs (threads) per worker")
    a("--partition", default="", metavar="P")
    a("--time", default="", metavar="T", help="time limit, as sbatch takes it (1:00:00)")
    a("--account", default="", metavar="A")
    a("--job-name", default="", metavar="NAME",
      help="sbatch --job-name (default envcheck-dask, with --job envcheck-job)")
    env = parser.add_mutually_exclusive_group()
    env.add_argument("--env", default="", metavar="PREFIX",
                     help="environment to activate (venv or conda prefix)")
    env.add_argument("--lock", default="", metavar="LOCK",
                     help="the workers' packages must match this lock (verify --lock); "
                     "the environment is the submitting shell's")
    a("--protocol", choices=("tcp", "ucx"), default="tcp")
    a("--interface", default="", metavar="IF", help="network interface for Dask (ib0, eth0)")
    a("--dashboard", default="127.0.0.1:0", metavar="ADDR",
      help="scheduler dashboard address (default 127.0.0.1:0: not reachable from outside)")
    a("--shared-dir", default="", metavar="DIR",
      help="where the scheduler file and reports go; every node must see it "
      "(default: $SLURM_SUBMIT_DIR/.envcheck)")
    a("--wait", type=_count, default=DEFAULT_WAIT, metavar="S",
      help=f"deadline for the scheduler and all workers to come up (default {DEFAULT_WAIT})")
    a("--verify-timeout", type=seconds, default=60.0, metavar="S",
      help="verify cluster --timeout (default 60)")
    a("--smoke", default="all", metavar="LIST", help="verify cluster --smoke (default all)")
    a("--then", default="", metavar="CMD", help="command to run when the verdict allows it")
    a("--then-on", choices=tuple(VERDICTS), default="warn",
      help="run --then when verify passes ('pass') or passes with warnings ('warn', default)")
    a("--sbatch", action="append", default=[], metavar="OPT",
      help="extra #SBATCH option, e.g. --sbatch=--constraint=a100 (repeatable)")
    a("--job", action="store_true",
      help="no Dask cluster: every task runs `envcheck verify job` (srun's own ranks, one GPU "
      "each), then --then when the verdict allows it")
    a("--submit", action="store_true",
      help="submit with sbatch, wait for the job, print its verify report; exit code is verify's")
    a("--submit-timeout", type=seconds, default=None, metavar="S",
      help="with --submit: cancel the job if it has not ended after S seconds")


_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$")
# Upper bounds: past them the number is a typo, and it would reach bash arithmetic (64-bit) and
# Slurm before anything said so. Documented in docs/slurm.md.
BOUNDS = {"nodes": 100_000, "gpus_per_node": 64, "cpus_per_gpu": 1024, "wait": 7 * 86400,
          "verify_timeout": 86400.0, "submit_timeout": 30 * 86400.0}
# Values written into #SBATCH lines: sbatch reads them with its own parser, in which one of
# these words anywhere on a line splits the job into heterogeneous components.
_HETJOB = re.compile(r"hetjob|packjob", re.IGNORECASE)


def _count(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _control(value: str, allowed: str = "") -> str:
    """The first control character in `value` (as \\n, \\x1b...), or ''."""
    for ch in value:
        if unicodedata.category(ch) == "Cc" and ch not in allowed:
            return repr(ch)[1:-1]
    return ""


def check_values(args: argparse.Namespace) -> None:
    """Refuse what cannot be written into the script safely: numbers out of bounds, control
    characters (a newline would start a new #SBATCH or shell line), hetjob words in #SBATCH
    values. Everything else is quoted by script.py and lands as inert text."""
    for name, top in BOUNDS.items():
        value = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if value is None:
            continue
        if not (0 < value <= top):
            raise BadInput(f"{flag} {value:g}: must be more than 0 and at most {top:g}")
    sbatch_values = [("--partition", args.partition), ("--account", args.account),
                     ("--job-name", args.job_name), ("--time", args.time)]
    sbatch_values += [("--sbatch", v) for v in args.sbatch]
    others = [("--env", args.env), ("--lock", args.lock), ("--interface", args.interface),
              ("--dashboard", args.dashboard), ("--shared-dir", args.shared_dir),
              ("--smoke", args.smoke)]
    for flag, value in sbatch_values + others:
        bad = _control(value)
        if bad:
            raise BadInput(f"{flag}: control character {bad} in {value!r}: not allowed")
    for flag, value in sbatch_values:
        if _HETJOB.search(value):
            raise BadInput(f"{flag} {value!r}: sbatch reads 'hetjob'/'packjob' in an #SBATCH "
                           "line as a job separator: not allowed")
    # --then is a command by design (bash -c runs it): newlines and tabs are part of a
    # script; other control characters (escape sequences) are not
    bad = _control(args.then, "\n\t")
    if bad:
        raise BadInput(f"--then: control character {bad}: not allowed")


# options that shape the Dask cluster only: meaningless (so refused) with --job
_DASK_ONLY = {"protocol": "tcp", "interface": "", "dashboard": "127.0.0.1:0", "wait": DEFAULT_WAIT,
              "smoke": "all"}


def options_from_args(args: argparse.Namespace, shared_dir: str = "") -> ScriptOptions:
    check_values(args)
    if args.job:
        given = [k for k, default in _DASK_ONLY.items() if getattr(args, k) != default]
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise BadInput(f"{flags}: shape the Dask cluster, and --job starts none")
    if args.time and not _TIME.match(args.time):
        raise BadInput(f"--time {args.time!r}: use minutes, H:MM:SS or D-HH:MM:SS")
    for opt in args.sbatch:
        if not opt.startswith("-"):
            raise BadInput(f"--sbatch {opt!r}: give an sbatch option, e.g. --constraint=a100")
    if args.env and not Path(args.env, "bin").is_dir():
        raise BadInput(f"--env {args.env}: no bin/ there: not an environment prefix")
    if args.lock:  # verify reads it in the job; a directory or FIFO is named now
        check_regular(args.lock, "--lock", 512 << 20)
    return ScriptOptions(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        cpus_per_gpu=args.cpus_per_gpu,
        partition=args.partition,
        time=args.time,
        account=args.account,
        job_name=args.job_name or ("envcheck-job" if args.job else "envcheck-dask"),
        env=os.path.abspath(args.env) if args.env else "",
        lock=os.path.abspath(args.lock) if args.lock else "",
        protocol=args.protocol,
        interface=args.interface,
        dashboard=args.dashboard,
        shared_dir=shared_dir or (os.path.abspath(args.shared_dir) if args.shared_dir else ""),
        wait=args.wait,
        verify_timeout=args.verify_timeout,
        smoke=args.smoke,
        then=args.then,
        then_on=args.then_on,
        extra_sbatch=tuple(args.sbatch),
        job=args.job,
    )


def run(args: argparse.Namespace) -> Report:
    if not args.submit:
        if args.submit_timeout is not None:
            raise BadInput("--submit-timeout needs --submit")
        return script_report(options_from_args(args))
    from envcheck.slurm.submit import submit

    shared = Path(os.path.abspath(args.shared_dir or ".envcheck"))
    script = render(options_from_args(args, str(shared)))
    return submit(script, shared, args.submit_timeout)


def script_report(opts: ScriptOptions) -> Report:
    """The sbatch script as the report's output (printed as is, nothing else on stdout)."""
    shape = f"{opts.nodes} node(s) x {opts.gpus_per_node} GPU(s), " + (
        "verify job on every task" if opts.job else f"a Dask cluster over {opts.protocol}")
    result = Result("slurm script", Status.PASS, f"sbatch script: {shape}", group="slurm")
    return Report("envcheck slurm script", results=(result,), output=render(opts))
