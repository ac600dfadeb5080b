"""The report files a run names (--json, --junit, --html), written after it: the command line's
(cli.py) and `verify job`'s watchdog's (rank 0's files when the job is aborted)."""

from __future__ import annotations

from envcheck.errors import EnvcheckError

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    import argparse

    from envcheck.report import Report

REPORT_FLAGS = ("json", "junit", "html")


class ReportNotWritten(Exception):
    """The run finished but its report could not be written (checked before, failed after)."""


def stamped(report: Report, args: argparse.Namespace) -> Report:
    """``report`` with when and what ran (taken as the command line was parsed)."""
    from envcheck.record import replace

    run = getattr(args, "_run", None)
    return report if report.run is not None or run is None else replace(report, run=run)


def write_reports(report: Report, args: argparse.Namespace) -> Report:
    """--json, --junit and --html of ``report`` stamped with its run; returns the stamped
    report, which the text table prints. A failure names the file (checked before the run,
    failed after)."""
    from envcheck.report import write_html, write_json, write_junit

    report = stamped(report, args)
    for flag, write in (("json", write_json), ("junit", write_junit), ("html", write_html)):
        path = getattr(args, flag, None)
        if path:
            try:
                write(report, path)
            except EnvcheckError as e:
                raise ReportNotWritten(e.message) from None
            except OSError as e:
                raise ReportNotWritten(f"--{flag} {path}: {e.strerror or e}") from None
    return report
