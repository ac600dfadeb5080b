"""A real envcheck process stopped by a real signal once it is under way: started as a terminal
starts it (SIGINT at its default disposition), signalled when the test's own sign of progress
appears, and never left running after the call."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from tests.support.deadlines import HANG


def sigint_as_a_terminal_gives_it() -> None:
    """A Popen preexec_fn: a runner started in the background ignores SIGINT, and Python then
    installs no KeyboardInterrupt handler; a terminal gives the default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stopped_once_ready(
    argv: list[str], env: dict[str, str], ready: Callable[[], bool], sig: int
) -> tuple[int, str]:
    """Run ``argv``, wait until ``ready()`` (a hang bound at most: the test fails saying what the
    process wrote), send ``sig``, and return its exit code and standard error."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=sigint_as_a_terminal_gives_it)
    try:
        deadline = time.monotonic() + HANG
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not ready():
            proc.kill()
            pytest.fail(f"{argv[1:]} never got under way: {proc.communicate(timeout=HANG)}")
        proc.send_signal(sig)  # to envcheck's pid only, as `kill` does
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return proc.returncode, err
