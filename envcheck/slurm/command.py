"""`envcheck slurm script`: print (or --submit) an sbatch script whose Dask cluster verifies
itself before the work runs. docs/slurm.md has the script's anatomy.

This module only parses: flags -> Options (options.py) -> pipeline.py -> Report."""

from __future__ import annotations

import argparse

from envcheck.flags import seconds
from envcheck.report import Report
from envcheck.slurm.options import DEFAULT_WAIT, VERDICTS, Options
from envcheck.slurm.pipeline import slurm_script


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
    a("--slurm-version", default="", metavar="X.Y",
      help="the target Slurm (17.11+): srun --overlap from 20.11, --gpus-per-task from 19.05 "
      "(default: `sinfo --version` here, else 17.11, whose script runs on every later one)")
    a("--submit", action="store_true",
      help="submit with sbatch, wait for the job, print its verify report; exit code is verify's")
    a("--submit-timeout", type=seconds, default=None, metavar="S",
      help="with --submit: cancel the job if it has not ended after S seconds")


def _count(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def options_from_args(args: argparse.Namespace) -> Options:
    """The flags as one Options: the only place that reads this verb's Namespace."""
    return Options(
        nodes=args.nodes, gpus_per_node=args.gpus_per_node, cpus_per_gpu=args.cpus_per_gpu,
        partition=args.partition, time=args.time, account=args.account,
        job_name=args.job_name, env=args.env, lock=args.lock, protocol=args.protocol,
        interface=args.interface, dashboard=args.dashboard, shared_dir=args.shared_dir,
        wait=args.wait, verify_timeout=args.verify_timeout, smoke=args.smoke, then=args.then,
        then_on=args.then_on, sbatch=tuple(args.sbatch), job=args.job, submit=args.submit,
        submit_timeout=args.submit_timeout, slurm_version=args.slurm_version,
    )  # fmt: skip


def run(args: argparse.Namespace) -> Report:
    return slurm_script(options_from_args(args))
