"""Writing to a file descriptor: ``write_all``, for pipes, memfds and opened destinations.
Standard library only, imports nothing else: the linker and its child use it before their
imports. Python 3.8: the verify side imports destinations.py."""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write fewer: a pipe, a signal);
    OSError as ``os.write`` raises it (BrokenPipeError when the reader is gone)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
