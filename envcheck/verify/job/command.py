"""`envcheck verify job`: run as every task of a parallel launch (srun, torchrun, mpirun,
horovodrun); rank 0 judges every rank's facts and prints the report; every rank exits with
rank 0's verdict, so `srun envcheck verify job && srun python main.py` means what it says.

Steps, each bounded by --timeout: the roll call on the rendezvous store (who arrived), the gloo
group, every rank's facts (signed, bounded JSON: never pickle), the known-answer all-reduces
(gloo; NCCL when every rank has a GPU). A rank that never arrives, dies or hangs is named by
rank 0 (its host, its pid), and the others still exit in time. This module and
its imports never import dask or distributed: jobs without Dask run it.
"""

from __future__ import annotations

import argparse
import os

from envcheck.errors import BadInput, ExitCode
from envcheck.flags import seconds
from envcheck.report import Report
from envcheck.verify.expect_options import (
    add_expectation_arguments,
    expect_options_from_args,
    expectations_from_options,
)
from envcheck.verify.job import group as grp
from envcheck.verify.job.horovod_job import wanted
from envcheck.verify.job.launch import launch_info
from envcheck.verify.job.run import JobRun

DEFAULT_TIMEOUT = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help="limit for each step: every rank arriving, the group forming, each collective; "
        f"a rank missing that long is named and every other rank exits (default "
        f"{DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--horovod", action="store_true",
        help="also run Horovod's collective (hvd.init(), a known-answer hvd.allreduce) and check "
        "hvd.size(), rank(), local_rank() against the launcher: on by default under horovodrun, "
        "this asks for it under mpirun or srun (how Horovod's MPI builds start)",
    )
    parser.add_argument(
        "--tensorflow", action="store_true",
        help="also run TensorFlow's MultiWorkerMirroredStrategy across the ranks (TF_CONFIG "
        "from the ranks' addresses, one worker per rank) and check its cross-replica sum; each "
        "rank's TensorFlow runs in a child killed at --timeout",
    )
    parser.add_argument(
        "--bench", action="store_true",
        help="also time the all-reduce (NCCL on GPUs, else gloo) over every rank and between "
        "each pair of hosts, as bus bandwidth against the links under them; the slowest pair "
        "of hosts is named when it falls short",
    )
    add_expectation_arguments(parser)


def run(args: argparse.Namespace) -> Report | int:
    if getattr(args, "list_checks", False):
        from envcheck.verify.job.checks import JOB_CHECKS

        for name, fn in JOB_CHECKS.items():
            doc = (fn.__doc__ or "").strip().splitlines()
            print(f"{name:18} job   {doc[0] if doc else ''}")
        return ExitCode.OK
    if args.timeout <= 0:
        raise BadInput(f"--timeout must be positive, not {args.timeout:g}")
    launch = launch_info(os.environ)
    exp = expectations_from_options(expect_options_from_args(args))
    debug = bool(getattr(args, "debug", False))
    if not debug:  # c10d's own warnings about the broken group: the report says it once
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    try:
        import torch.distributed  # noqa: F401 - the group needs it; say so in one line
    except ImportError as e:
        raise BadInput(f"verify job needs torch in this environment ({e})") from None
    job = JobRun(launch, exp, args.timeout, debug=debug,
                 horovod=wanted(os.environ, bool(getattr(args, "horovod", False))),
                 tensorflow=bool(getattr(args, "tensorflow", False)),
                 bench=bool(getattr(args, "bench", False)))
    outcome = job.run()
    if isinstance(outcome, Report):
        return outcome
    code, line = outcome
    if debug or (line and code == ExitCode.ERROR and not job.heard_rank0):
        grp.debug_line(launch, line or f"exit {code}")
    return code

