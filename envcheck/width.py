"""How wide envcheck's text is: one rule for every report on stdout and every progress line.

A terminal's own width; where the stream is no terminal (a pipe, a file, a launcher's
capture), ``COLUMNS`` when it is set to a whole number of at least MIN_COLUMNS, else DEFAULT.
Under Open MPI a rank's stdout is a pseudo-terminal mpirun opens whatever its own output is
(a log, a pipe): it counts as no terminal, so rank 0's report is as wide under mpirun as
under torchrun or srun, whose ranks write into pipes.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (tests/unit/test_startup_imports.py)
    from typing import IO

DEFAULT = 100  # a pipe or a file without COLUMNS
MIN_COLUMNS = 20  # narrower COLUMNS values are ignored: no report line wraps below this


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal a person reads (not an Open MPI rank's)."""
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        return False
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def given_columns() -> int | None:
    """``COLUMNS`` where it is a whole number of at least MIN_COLUMNS; None otherwise."""
    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) >= MIN_COLUMNS:
        return int(given)
    return None


def columns(stream: IO[str]) -> int:
    """The width text written to ``stream`` wraps at (the module's rule)."""
    if is_terminal(stream):
        try:
            own = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            own = 0
        if own > 0:  # a fresh pseudo-terminal says 0: then as for a pipe
            return own
    return given_columns() or DEFAULT
