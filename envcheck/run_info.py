"""When and what ran: the stamp every report carries (JSON ``run``, JUnit properties, the
HTML header, the text report's last line with ``-v``). Python 3.8: the verify side imports it.
"""

from __future__ import annotations

import shlex
import socket
import sys
import time

from envcheck.record import frozen
from envcheck.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence


@frozen
class RunInfo:
    """``time``: when the run started, ISO 8601 in UTC to the second; ``argv``: the command
    line as typed, the program first ('envcheck', 'verify', 'node', '-v')."""

    time: str
    envcheck: str
    host: str
    argv: tuple

    @classmethod
    def now(cls, argv: Sequence[str] | None = None) -> RunInfo:
        words = ("envcheck", *sys.argv[1:]) if argv is None else tuple(argv)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return cls(stamp, __version__, socket.gethostname(), tuple(str(w) for w in words))

    @property
    def command(self) -> str:
        """The command line as a shell would take it back."""
        return " ".join(shlex.quote(w) for w in self.argv)

    def line(self) -> str:
        """'envcheck 0.1.0 on gpu-node-1 at 2026-11-28T22:40:01Z: envcheck verify node -v'."""
        return f"envcheck {self.envcheck} on {self.host} at {self.time}: {self.command}"

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "envcheck": self.envcheck, "host": self.host,
                "argv": list(self.argv)}


def run_of(report: Any) -> RunInfo:
    """The report's stamp; a report made outside the command line (the Python API) is stamped
    as it is written."""
    return getattr(report, "run", None) or RunInfo.now()
