"""`envcheck verify job`: run as every task of a parallel launch (srun, torchrun, mpirun,
horovodrun); rank 0 judges every rank's facts and prints the report; every rank exits with
rank 0's verdict, so `srun envcheck verify job && srun python main.py` means what it says. A
warning exits 0 unless --strict (run.launch_verdict): the launch goes on.
This module only parses: flags -> JobOptions (options.py) -> pipeline.py -> Report.

Steps, each bounded by --timeout: the roll call on the rendezvous store (who arrived), the gloo
group, every rank's facts (signed, bounded JSON: never pickle), the known-answer all-reduces
(gloo; NCCL when every rank has a GPU). A rank that never arrives, dies or hangs is named by
rank 0 (its host, its pid), and the others still exit in time. This module and
its imports never import dask or distributed: jobs without Dask run it.
"""

from __future__ import annotations

import argparse

from envcheck.flags import seconds
from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.job.options import DEFAULT_TIMEOUT, JobOptions
from envcheck.verify.job.pipeline import verify_job


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
    parser.add_argument(
        "--strict", action="store_true",
        help="a warning fails the launch: exit 1 on every rank (default: warnings exit 0, so "
        "torchrun, srun, mpirun and horovodrun carry on; the report still says warn)",
    )
    add_expectation_arguments(parser)


def run(args: argparse.Namespace) -> Report | int:
    if getattr(args, "list_checks", False):
        from envcheck.verify.catalog import list_report

        return list_report("job")
    opts = options_from_args(args)

    def write(report: Report) -> None:  # the watchdog's last act on rank 0: the files
        from envcheck.report_files import write_reports

        write_reports(report, args)

    return verify_job(opts, on_abort=write)


def options_from_args(args: argparse.Namespace) -> JobOptions:
    """The flags as one JobOptions: the only place that reads this verb's Namespace."""
    return JobOptions(
        timeout=args.timeout,
        horovod=bool(getattr(args, "horovod", False)),
        tensorflow=bool(getattr(args, "tensorflow", False)),
        bench=bool(getattr(args, "bench", False)),
        debug=bool(getattr(args, "debug", False)),
        strict=bool(getattr(args, "strict", False)),
        expect=expect_options_from_args(args),
    )
