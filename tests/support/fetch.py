"""Commands that download (debootstrap, apt-get, pip, uv) as the tests' fixtures run them.

A download fails now and then on any network (a mirror's hiccup, a proxy's reset) and the same
command succeeds a minute later. ``fetch`` runs such a command up to three times with a growing
pause, and when the last try fails it raises ``FetchFailed`` naming the command, each try's exit
code and the tool's own last lines of output, so a red run says what the tool said.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

TRIES = 3
PAUSE = 10.0  # seconds before the second try; doubled before each later one
TAIL_LINES = 25


class FetchFailed(RuntimeError):
    """A download command failed on every try; the message holds its output's tail."""


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def fetch(
    cmd: Sequence[str],
    what: str,
    *,
    timeout: float = 900,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    tries: int = TRIES,
    pause: float = PAUSE,
) -> subprocess.CompletedProcess:
    """Run ``cmd`` (text output captured) until it exits 0, at most ``tries`` times."""
    codes: list[str] = []
    for attempt in range(1, tries + 1):
        try:
            proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                                  env=None if env is None else dict(env), cwd=cwd, check=False)
        except subprocess.TimeoutExpired as e:
            said = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) \
                else (e.stderr or "")
            proc = subprocess.CompletedProcess(
                e.cmd, -1, "", f"{said}\n(timed out after {timeout:g} s)")
        if proc.returncode == 0:
            return proc
        codes.append("timeout" if proc.returncode == -1 else str(proc.returncode))
        if attempt < tries:
            time.sleep(pause * 2 ** (attempt - 1))
    said = tail(proc.stderr) or tail(proc.stdout) or "(it printed nothing)"
    raise FetchFailed(f"{what}: `{' '.join(map(str, cmd))[:300]}` failed {tries} times "
                      f"(exit {', '.join(codes)}); its last output:\n{said}")


def unreachable(host: str, port: int = 443, tries: int = TRIES, timeout: float = 10.0,
                pause: float = PAUSE) -> str:
    """Why ``host:port`` took no connection on any of ``tries`` tries ("" once one succeeds)."""
    why = ""
    for attempt in range(1, tries + 1):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return ""
        except OSError as e:
            why = f"{host}:{port} took no connection in {tries} tries of {timeout:g} s ({e})"
        if attempt < tries:
            time.sleep(pause * 2 ** (attempt - 1))
    return why


def require_host(host: str, port: int = 443) -> None:
    """Skip the test when ``host`` cannot be reached; under ENVCHECK_TESTS_REQUIRE_ALL=1 (CI,
    which reaches PyPI) fail instead, saying so."""
    why = unreachable(host, port)
    if not why:
        return
    if os.environ.get("ENVCHECK_TESTS_REQUIRE_ALL") == "1":
        pytest.fail(f"{why} (ENVCHECK_TESTS_REQUIRE_ALL=1)", pytrace=False)
    pytest.skip(why)
