"""Reports read well piped: one width rule (envcheck.width) for every report, and tables that
keep their columns at that width. The rule on real streams (a pipe, a pseudo-terminal of a
set size); then `python -m envcheck diff` of two real locks with its stdout a pipe: at most
100 columns without COLUMNS, its table's header on one line, COLUMNS=60 and COLUMNS=160
respected, a COLUMNS that is no width ignored."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from envcheck.report import Result, Status
from envcheck.report_table import narrowed
from envcheck.report_text import skip_lines
from envcheck.width import DEFAULT, columns

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
OLD = DATA / "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"
NEW = DATA / "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml"
BAD = ["wide", "0", "-3", "12", "80x", ""]
HEADER = re.compile(r"\W package\W+change\W+old\W+new\W*$")


@pytest.fixture(scope="module")
def locks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two locks under short names (a name wider than the width is a word never cut)."""
    where = tmp_path_factory.mktemp("locks")
    shutil.copy(OLD, where / "ml.conda-lock.yml")
    shutil.copy(NEW, where / "torch.conda-lock.yml")
    return where


def _diff(where: Path, given: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(ROOT)
    if given is not None:
        env["COLUMNS"] = given
    done = subprocess.run([sys.executable, "-m", "envcheck", "diff", "ml.conda-lock.yml",
                           "torch.conda-lock.yml"],
                          capture_output=True, text=True, env=env, cwd=where, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout.splitlines()


@pytest.fixture
def pipe():  # noqa: ANN201 - a writable pipe's end
    r, w = os.pipe()
    with os.fdopen(r) as _, os.fdopen(w, "w") as stream:
        yield stream


@pytest.fixture
def terminal():  # noqa: ANN201 - a pseudo-terminal 132 columns wide
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 132, 0, 0))
    with os.fdopen(leader, "rb") as _, os.fdopen(follower, "w") as stream:
        yield stream


@pytest.mark.parametrize(("given", "width"), [(None, DEFAULT), ("60", 60), ("160", 160),
                                              *((bad, DEFAULT) for bad in BAD)])
def test_a_pipe_is_as_wide_as_a_valid_columns_else_100(pipe, monkeypatch, given, width) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("OMPI_COMM_WORLD_RANK", raising=False)
    if given is not None:
        monkeypatch.setenv("COLUMNS", given)
    assert columns(pipe) == width


def test_a_terminal_is_as_wide_as_itself_whatever_columns_says(terminal, monkeypatch) -> None:
    monkeypatch.delenv("OMPI_COMM_WORLD_RANK", raising=False)
    monkeypatch.setenv("COLUMNS", "60")
    assert columns(terminal) == 132


def test_an_open_mpi_ranks_terminal_is_as_wide_as_a_pipe(terminal, monkeypatch) -> None:
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.delenv("COLUMNS", raising=False)
    assert columns(terminal) == DEFAULT
    monkeypatch.setenv("COLUMNS", "60")
    assert columns(terminal) == 60


def test_piped_without_columns_a_table_keeps_its_columns_within_100(locks: Path) -> None:
    lines = _diff(locks, None)
    assert max(map(len, lines)) <= 100, "\n".join(ln for ln in lines if len(ln) > 100)
    # the header: every column title on one line; the lock's name (the same on all 560 rows)
    # said once above the table, and once in the verdict's message
    assert sum(bool(HEADER.search(ln)) for ln in lines) == 1, "\n".join(lines[:12])
    assert sum("torch.conda-lock.yml" in ln for ln in lines) == 2, "\n".join(lines[:12])
    assert any(re.search(r"\W adlfs\W+changed\W+2023\.9\.0 pyhd8ed1ab_0\W", ln) for ln in lines)


@pytest.mark.parametrize("given", ["60", "160"])
def test_piped_columns_sets_the_width(locks: Path, given: str) -> None:
    lines = _diff(locks, given)
    widest = max(map(len, lines))
    assert widest <= int(given), "\n".join(ln for ln in lines if len(ln) > int(given))
    assert widest > min(int(given), DEFAULT) - 10  # the width is used, not a narrower one


@pytest.mark.parametrize("bad", BAD)
def test_a_columns_that_is_no_width_is_ignored(locks: Path, bad: str) -> None:
    assert _diff(locks, bad) == _diff(locks, None)


def test_a_table_too_wide_loses_columns_the_same_on_every_row_to_one_line() -> None:
    rows = [(f"p{i}", "linux-64", f"1.{i}", f"2.{i}") for i in range(8)]
    shape = narrowed(("package", "platform", "old", "new"), rows, 24)
    assert shape.kind == "table" and shape.columns == ("package", "old", "new")
    assert shape.above == ["the same on every row: platform linux-64"]
    assert narrowed(("package", "platform", "old", "new"), rows, 10).kind == "rows"


def test_skips_on_the_same_nodes_name_those_nodes_once() -> None:
    node = "vm (4 ranks)"
    skips = [Result(c, Status.SKIP, "no GPU", node=node) for c in ("driver", "gpus", "ecc")]
    skips.append(Result("job.gpu-binding", Status.SKIP, "no rank sees a CUDA device"))
    assert skip_lines(skips) == [f"  3 skipped: no GPU (on {node}: driver, gpus, ecc)",
                                 "  1 skipped: no rank sees a CUDA device (job.gpu-binding)"]
