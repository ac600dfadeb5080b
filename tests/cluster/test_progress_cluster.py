"""verify cluster's smoke tests on a terminal: one line, rewritten as tests start and end,
saying how many ended, which run and on how many workers, erased before the report; nothing
of it when stderr is a pipe. A real embedded LocalCluster of 2 workers."""

from __future__ import annotations

import pytest

from tests.support.terminal import run_envcheck

pytestmark = pytest.mark.slow
ARGS = ["verify", "cluster", "--workers", "2", "--smoke", "submit,array"]


def test_a_terminal_sees_the_smoke_tests_run_and_end() -> None:
    rc, out, err = run_envcheck(ARGS, tty=True)
    assert rc == 0, err.decode(errors="replace")
    assert b"\rsmoke tests on 2 workers: 0/2 done" in err
    assert b", running submit" in err or b", running array" in err
    assert b"\rsmoke tests on 2 workers: 2/2 done\x1b[K\r\x1b[K" in err  # erased at the end
    assert b"smoke tests on" not in out and b"\r" not in out


def test_a_pipe_sees_no_progress() -> None:
    rc, out, err = run_envcheck(ARGS, tty=False)
    assert rc == 0, err.decode(errors="replace")
    assert b"smoke tests on" not in err and b"\r" not in err
