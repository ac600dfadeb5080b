"""The README's test command (`-n 3 --dist loadgroup`) keeps each xdist_group on one worker:
the heavy tests (images, network namespaces, Slurm, old envs) never run beside each other, and a
group's session fixture is made once. pytest 9.2 silently stopped this (pytest-xdist issue
#1386: the group's nodeid suffix no longer takes effect; pyproject's test extra pins pytest
below 9.2): a real pytest session with the installed pytest and xdist says which worker ran
each test of one group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.deadlines import HANG

pytestmark = pytest.mark.unit

MODULE = """
import os, pytest

@pytest.mark.xdist_group(name="heavy")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(os.path.join(os.environ["RAN_DIR"], f"ran-{i}"), "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_one_group_runs_on_one_worker(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "test_grouped.py").write_text(MODULE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup",
         "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "base"), "test_grouped.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=HANG,
        env={**os.environ, "RAN_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = {p.name: p.read_text() for p in tmp_path.glob("ran-*")}
    assert len(workers) == 6, workers
    assert len(set(workers.values())) == 1, f"one group spread over workers: {workers}"
