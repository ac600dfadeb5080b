"""Running the image engine, and why a build failed: a registry the engine could not reach
(exit 7, as a channel or PyPI that cannot be reached) or the build itself (exit 2).

The engine's stderr is passed through line by line as it comes and its tail kept: podman,
docker and buildah say a pull failed for the network in their own words ("pinging container
registry HOST", "dial tcp", "no such host"), which is what tells the two apart.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Sequence

from envcheck.text import safe

KEEP_LINES = 200
# what podman, buildah and docker (BuildKit and the classic builder) say when the network,
# not the image, failed a pull
_NETWORK = re.compile(
    r"connection refused|no such host|i/o timeout|network is unreachable|TLS handshake timeout"
    r"|server misbehaving|Temporary failure in name resolution|no route to host"
    r"|connection reset by peer|dial tcp", re.IGNORECASE)
_REGISTRY = (
    re.compile(r"pinging container registry ([^\s:\"]+(?::\d+)?)"),
    re.compile(r"docker://([^/\s\"]+)/"),
    re.compile(r"https?://([^/\s\"]+)/v2/"),
    re.compile(r"failed to resolve source metadata for ([^/\s\"]+)/"),
)


def run_engine(cmd: Sequence[str]) -> tuple[int, list[str]]:
    """(the engine's exit code, the last KEEP_LINES lines of its stderr); its stdout and
    stderr still reach the terminal as they come."""
    tail: deque[str] = deque(maxlen=KEEP_LINES)
    with subprocess.Popen(list(cmd), stderr=subprocess.PIPE, text=True, errors="replace",
                          bufsize=1) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(safe(line))  # a build step echoes text from the lock
            sys.stderr.flush()
            tail.append(line.rstrip("\n"))
    return proc.returncode, list(tail)


def unreachable_registry(lines: Iterable[str]) -> str | None:
    """The registry a pull could not reach, or None when what the engine said is no pull
    that failed for the network (a line must say both: a failure of the network and a
    registry's address, so a build step's own network trouble stays a build failure)."""
    for line in reversed(list(lines)):
        if not _NETWORK.search(line):
            continue
        for pattern in _REGISTRY:
            m = pattern.search(line)
            if m:
                return m.group(1)
    return None
