"""`envcheck docs [TOPIC]` prints the page the install carries, through a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def envcheck(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envcheck", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_without_a_topic_it_lists_the_topics_with_their_titles() -> None:
    proc = envcheck("docs")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    for topic in ("exit-codes", "expect", "recipes", "security", "build", "verify-node"):
        assert topic in listed, proc.stdout
    assert "Exit codes" in listed["exit-codes"]


@pytest.mark.parametrize(("topic", "page"), [
    ("exit-codes", "exit-codes.md"), ("recipes.md", "recipes.md"),
    ("docs/security.md", "security.md"), ("expect", "expect/README.md"),
    ("expect/a100x8.yaml", "expect/a100x8.yaml"),
])
def test_a_topic_prints_its_page_as_it_is(tmp_path: Path, topic: str, page: str) -> None:
    proc = envcheck("docs", topic, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "docs" / page).read_text(encoding="utf-8")


def test_an_unknown_topic_is_one_line_exit_4_naming_the_topics() -> None:
    proc = envcheck("docs", "exit-code")
    assert proc.returncode == 4
    (line,) = proc.stderr.strip().splitlines()
    assert "no documentation topic 'exit-code'" in line and "exit-codes" in line
