"""`verify job` as options -> Report, in every rank of a parallel launch.

Rank 0's Report is the full report. Another rank's Report holds one ``job.ranks.verdict`` result
carrying rank 0's line and rank 0's exit code, and is marked not shown: the command line prints
and writes nothing for it (one line on stderr with --debug, or when rank 0 is gone).
"""

from __future__ import annotations

import os
from typing import Callable

from envcheck.errors import BadInput, ExitCode
from envcheck.report import Report
from envcheck.verify.expect_options import expectations_from_options
from envcheck.verify.job import group as grp
from envcheck.verify.job.horovod_job import wanted
from envcheck.verify.job.launch import launch_info
from envcheck.verify.job.options import JobOptions
from envcheck.verify.job.run import JobRun


def verify_job(opts: JobOptions, on_abort: Callable[[Report], None] | None = None) -> Report:
    """``on_abort``: given rank 0's report when its watchdog ends the process (no return)."""
    launch = launch_info(os.environ)
    exp = expectations_from_options(opts.expect)
    if not opts.debug:  # c10d's own warnings about the broken group: the report says it once
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    try:
        import torch.distributed  # noqa: F401 - the group needs it; say so in one line
    except ImportError as e:
        raise BadInput(f"verify job needs torch in this environment ({e})") from None
    job = JobRun(launch, exp, opts.timeout, debug=opts.debug,
                 horovod=wanted(os.environ, opts.horovod), tensorflow=opts.tensorflow,
                 bench=opts.bench, strict=opts.strict, on_abort=on_abort)
    report = job.run()
    if report.shown:
        return report
    line = report.results[0].message
    if opts.debug or (report.exit_code == ExitCode.ERROR and not job.heard_rank0):
        grp.debug_line(launch, line)
    return report

