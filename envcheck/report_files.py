"""The report files a run names (--json, --junit), written after it: the command line's
(cli.py) and `verify job`'s watchdog's (rank 0's files when the job is aborted)."""

from __future__ import annotations

from envcheck.errors import EnvcheckError

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    import argparse

    from envcheck.report import Report

REPORT_FLAGS = ("json", "junit")


class ReportNotWritten(Exception):
    """The run finished but its report could not be written (checked before, failed after)."""


def write_reports(report: Report, args: argparse.Namespace) -> None:
    """--json and --junit; a failure names the file (checked before the run, failed after)."""
    from envcheck.report import write_json, write_junit

    for flag, write in (("json", write_json), ("junit", write_junit)):
        path = getattr(args, flag, None)
        if path:
            try:
                write(report, path)
            except EnvcheckError as e:
                raise ReportNotWritten(e.message) from None
            except OSError as e:
                raise ReportNotWritten(f"--{flag} {path}: {e.strerror or e}") from None
