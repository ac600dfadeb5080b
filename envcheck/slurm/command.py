"""`envcheck slurm script`: print (or --submit) an sbatch script whose Dask cluster verifies
itself before the work runs. docs/slurm.md has the script's anatomy."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.report import Report, Result, Status
from envcheck.slurm.script import DEFAULT_WAIT, VERDICTS, ScriptOptions, render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--nodes", type=int, default=1, metavar="N", help="nodes (default 1)")
    a("--gpus-per-node", type=int, default=1, metavar="G", help="GPUs and workers per node")
    a("--cpus-per-gpu", type=int, default=1, metavar="C", help="CPUs (threads) per worker")
    a("--partition", default="", metavar="P")
    a("--time", default="", metavar="T", help="time limit, as sbatch takes it (1:00:00)")
    a("--account", default="", metavar="A")
    a("--job-name", default="envcheck-dask", metavar="NAME")
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
    a("--wait", type=int, default=DEFAULT_WAIT, metavar="S",
      help=f"deadline for the scheduler and all workers to come up (default {DEFAULT_WAIT})")
    a("--verify-timeout", type=float, default=60.0, metavar="S",
      help="verify cluster --timeout (default 60)")
    a("--smoke", default="all", metavar="LIST", help="verify cluster --smoke (default all)")
    a("--then", default="", metavar="CMD", help="command to run when the verdict allows it")
    a("--then-on", choices=tuple(VERDICTS), default="warn",
      help="run --then when verify passes ('pass') or passes with warnings ('warn', default)")
    a("--sbatch", action="append", default=[], metavar="OPT",
      help="extra #SBATCH option, e.g. --sbatch=--constraint=a100 (repeatable)")
    a("--submit", action="store_true",
      help="submit with sbatch, wait for the job, print its verify report; exit code is verify's")
    a("--submit-timeout", type=float, default=None, metavar="S",
      help="with --submit: cancel the job if it has not ended after S seconds")


_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$")


def options_from_args(args: argparse.Namespace, shared_dir: str = "") -> ScriptOptions:
    for name in ("nodes", "gpus_per_node", "cpus_per_gpu", "wait"):
        if getattr(args, name) < 1:
            raise BadInput(f"--{name.replace('_', '-')} must be 1 or more")
    if args.time and not _TIME.match(args.time):
        raise BadInput(f"--time {args.time!r}: use minutes, H:MM:SS or D-HH:MM:SS")
    for opt in args.sbatch:
        if not opt.startswith("-"):
            raise BadInput(f"--sbatch {opt!r}: give an sbatch option, e.g. --constraint=a100")
    if args.env and not Path(args.env, "bin").is_dir():
        raise BadInput(f"--env {args.env}: no bin/ there: not an environment prefix")
    if args.lock and not Path(args.lock).is_file():
        raise BadInput(f"--lock {args.lock}: no such file")
    return ScriptOptions(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        cpus_per_gpu=args.cpus_per_gpu,
        partition=args.partition,
        time=args.time,
        account=args.account,
        job_name=args.job_name,
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
    shape = f"{opts.nodes} node(s) x {opts.gpus_per_node} GPU(s), {opts.protocol}"
    result = Result("slurm script", Status.PASS, f"sbatch script: {shape}", group="slurm")
    return Report("envcheck slurm script", results=(result,), output=render(opts))
