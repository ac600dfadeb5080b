"""envcheck.progress on a real pseudo-terminal: one line, rewritten with a carriage return,
fitted to the terminal's width, erased at the end and before a message; nothing on a pipe, on
a rank other than 0, or where the command line did not allow it. The smoke tests' and the
level-2 load's lines are built from what they count."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import termios
from collections.abc import Iterator

import pytest

from envcheck import progress
from envcheck.verify.node.load import phase_counts
from envcheck.verify.smoke.runner import Board


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in progress.RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    progress.allow(True)
    yield
    progress.allow(False)


def _terminal(columns: int = 60) -> tuple[int, object]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return master, os.fdopen(slave, "w")


def _read(master: int) -> bytes:
    return os.read(master, 65536)


def test_a_terminal_gets_one_rewritten_line_erased_at_the_end(allowed: None) -> None:
    master, tty = _terminal()
    with progress.step("solving demo", stream=tty) as line:  # type: ignore[arg-type]
        line.say("resolving 3 pip requirements")
    tty.close()
    assert _read(master) == (b"\rsolving demo\x1b[K\rresolving 3 pip requirements\x1b[K"
                             b"\r\x1b[K")


def test_a_line_wider_than_the_terminal_is_cut_to_one_row(allowed: None) -> None:
    master, tty = _terminal(columns=20)
    progress.Line(tty).say("x" * 50)  # type: ignore[arg-type]
    tty.close()
    drawn = _read(master).decode()
    assert drawn == "\r" + "x" * 18 + "…\x1b[K"


def test_a_message_on_stderr_clears_the_line_first(allowed: None) -> None:
    master, tty = _terminal()
    with progress.step("solving demo", stream=tty):  # type: ignore[arg-type]
        progress.clear_for_output()
    tty.close()
    assert _read(master) == b"\rsolving demo\x1b[K\r\x1b[K"


def test_a_pipe_gets_nothing(allowed: None) -> None:
    r, w = os.pipe()
    with os.fdopen(w, "w") as pipe, progress.step("solving demo", stream=pipe) as line:
        line.say("resolving")
    with os.fdopen(r, "rb") as out:
        assert out.read() == b""


@pytest.mark.parametrize("variable", progress.RANK_VARIABLES)
def test_a_rank_other_than_zero_gets_nothing(allowed: None, variable: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    master, tty = _terminal()
    monkeypatch.setenv(variable, "0")
    assert progress.shown(tty)  # type: ignore[arg-type]
    monkeypatch.setenv(variable, "3")
    assert not progress.shown(tty)  # type: ignore[arg-type]
    tty.close()
    os.close(master)


def test_without_the_command_lines_leave_a_terminal_gets_nothing() -> None:
    master, tty = _terminal()
    progress.allow(False)
    assert not progress.shown(tty)  # type: ignore[arg-type]
    tty.close()
    os.close(master)


def test_the_smoke_line_says_how_many_ended_which_run_and_on_how_many_workers() -> None:
    said: list[str] = []

    class Recorder:
        def say(self, text: str) -> None:
            said.append(text)

    board = Board(3, 64, Recorder())
    with board.running("ddp"), board.running("xgboost"):
        pass
    assert said == [
        "smoke tests on 64 workers: 0/3 done, running ddp",
        "smoke tests on 64 workers: 0/3 done, running ddp, xgboost",
        "smoke tests on 64 workers: 1/3 done, running ddp",
        "smoke tests on 64 workers: 2/3 done",
    ]


def test_the_load_line_counts_gpus_per_phase() -> None:
    assert phase_counts({}, 8) == "8 starting"
    assert phase_counts({0: "load", 1: "gemm", 2: "gemm", 3: "end"}, 8) == \
        "4 starting, 1 copying, 2 GEMM, 1 done"
