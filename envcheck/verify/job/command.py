"""`envcheck verify job`: run as every task of a parallel launch (srun, torchrun, mpirun,
horovodrun); rank 0 judges every rank's facts and prints the report; every rank exits with
rank 0's verdict, so `srun envcheck verify job && srun python main.py` means what it says. A
warning exits 0 unless --strict (verdict.launch_verdict): the launch goes on.
This module only parses: flags (JobOptions' declared fields, options.py) -> pipeline.py
-> Report.

Steps, each bounded by --timeout: the roll call on the rendezvous store (who arrived), the gloo
group, every rank's facts (signed, bounded JSON: never pickle), the known-answer all-reduces
(gloo; NCCL when every rank has a GPU). A rank that never arrives, dies or hangs is named by
rank 0 (its host, its pid), and every rank ends within the stalled step's --timeout + 3 s.
This module and its imports never import dask or distributed: jobs without Dask run it.
"""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.job.options import JobOptions
from envcheck.verify.job.pipeline import verify_job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    option.add_arguments(parser, JobOptions)
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
    return option.from_args(JobOptions, args, expect=expect_options_from_args(args),
                            debug=bool(getattr(args, "debug", False)))
