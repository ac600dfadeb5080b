"""Processes started for the embedded cluster write to a log file, not to the user's terminal.

A terminal's Ctrl-C reaches every process of the foreground group: the embedded cluster's
worker processes die mid-task and print dozens of lines of tracebacks while envcheck closes
them. envcheck reports what matters itself (one line, exit 130), so while the cluster starts,
file descriptor 2 points at a log file; the processes started then inherit it and keep it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def children_stderr_to_log(debug: bool) -> Iterator[str]:
    """Inside, stderr (fd 2) is a log file that children inherit; yields its path ('' with
    --debug, where everything stays on the terminal)."""
    if debug:
        yield ""
        return
    fd, path = tempfile.mkstemp(prefix="envcheck-workers-", suffix=".log")
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield path
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def remove_if_empty(path: str) -> None:
    """Once the processes that held the log have ended: an empty log is not left behind."""
    with contextlib.suppress(OSError):
        if path and os.path.getsize(path) == 0:
            os.unlink(path)
