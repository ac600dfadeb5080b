"""Progress on a terminal only: one line on stderr, rewritten in place (``\\r``) as a long step
goes on, cleared when it ends.

    with progress.step("solving py311 for linux-64 (1/2) with rattler") as line:
        ...
        line.say("resolving 12 pip requirements for linux-64 with uv")

A line is drawn only where a person watches: the command line allowed it (``allow``: envcheck
run as a program, not ``--quiet``, no report on standard output), stderr is a terminal, and
this process is rank 0 of its launcher or runs under none. Anywhere else (a pipe, a file,
``--json -``, the Python API, rank 3 of torchrun) every call does nothing, so a step writes
its progress without asking where it goes. ``say`` draws at once, ``tick`` (a count that
changes many times a second) at most every ``MIN_INTERVAL_S``; a message on stderr
(``envcheck.text.say``) clears the line first (``clear_for_output``).

Standard library only (``verify node`` starts without more), Python 3.8.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from envcheck.text import safe
from envcheck.width import columns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

# a launcher's rank variables: a value other than 0 is a rank that stays silent
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "HOROVOD_RANK",
                  "SLURM_PROCID")
MIN_INTERVAL_S = 0.1
_allowed = [False]
_active: list[Line] = []
_lock = threading.RLock()


def allow(on: bool) -> None:
    """Whether this process may show progress at all (the CLI: not --quiet, no report on
    standard output); the Python API leaves it off."""
    _allowed[0] = on


def rank_zero(env: dict[str, str] | None = None) -> bool:
    """No launcher variable names a rank other than 0."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    return all(env.get(name, "0").strip() in ("0", "") for name in RANK_VARIABLES)


def shown(stream: IO[str] | None = None) -> bool:
    """Whether a progress line would be drawn on ``stream`` (stderr) now."""
    stream = stream or sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        tty = False
    return _allowed[0] and tty and rank_zero()


class Line:
    """One status line on ``stream``; ``say`` rewrites it, ``clear`` erases it. Thread-safe
    (install's fetch threads report into one line)."""

    def __init__(self, stream: IO[str] | None = None, show: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.show = shown(self.stream) if show is None else show
        self.text = ""
        self.drawn = False
        self.last = 0.0

    def say(self, text: str) -> None:
        """Show ``text`` now (a new phase, a new count of a slow step)."""
        self._draw(text, 0.0)

    def tick(self, text: str) -> None:
        """Show ``text`` unless the line was drawn less than ``MIN_INTERVAL_S`` ago (counts
        that change many times a second: bytes fetched)."""
        self._draw(text, MIN_INTERVAL_S)

    def _draw(self, text: str, interval: float) -> None:
        if not self.show:
            return
        with _lock:
            now = time.monotonic()
            if text == self.text and self.drawn or now - self.last < interval:
                return
            self.text, self.last = text, now
            # safe: a name from a lock or recipe reaches the terminal escaped, as in `say`
            self._write("\r" + _fit(safe(text), columns(self.stream)) + "\x1b[K")
            self.drawn = True

    def clear(self) -> None:
        with _lock:
            if self.drawn:
                self._write("\r\x1b[K")
                self.drawn = False

    def _write(self, data: str) -> None:
        try:
            self.stream.write(data)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth an error
            self.show = False


class step:  # noqa: N801 - used as a function: `with progress.step(...) as line`
    """A context that shows ``text`` on a fresh ``Line`` and clears it at the end, however
    the step ends (``show``: as ``Line`` takes it; None: where ``shown``)."""

    def __init__(self, text: str, stream: IO[str] | None = None,
                 show: bool | None = None) -> None:
        self.line = Line(stream, show)
        self.text = text

    def __enter__(self) -> Line:
        with _lock:
            _active.append(self.line)
        self.line.say(self.text)
        return self.line

    def __exit__(self, *exc: object) -> None:
        with _lock:
            self.line.clear()
            _active.remove(self.line)


def clear_for_output() -> None:
    """Erase any progress line before another message goes to stderr; the next ``say``
    draws it again."""
    with _lock:
        for line in _active:
            line.clear()
            line.text = ""


def _fit(text: str, columns: int) -> str:
    """One terminal row: a line that wrapped could not be rewritten with ``\\r``."""
    text = " ".join(text.split())
    width = max(columns - 1, 10)
    return text if len(text) <= width else text[: width - 1] + "…"
