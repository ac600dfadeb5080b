"""`envcheck verify cluster` piped, against a real subprocess cluster of four workers, one of
them from a venv whose msgpack differs: the report is at most 100 columns wide (COLUMNS
unset), the skew table keeps its columns with the three identical workers as one column named
once above it, and the skewed row is a row of that table; at COLUMNS=60 every line fits 60."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from tests.conftest import OTHER_MSGPACK
from tests.support.subprocess_cluster import run_envcheck, start_cluster

pytestmark = pytest.mark.slow
SAME = ("a", "b", "c")


def test_a_piped_skew_report_keeps_its_columns_and_names_the_group_once(
    tmp_path: Path, venv_with_other_msgpack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    cluster = start_cluster(tmp_path / "cluster")
    try:
        for name in SAME:
            cluster.add_worker(name)
        cluster.add_worker("odd", python=venv_with_other_msgpack)
        names = cluster.wait_for_workers([*SAME, "odd"])
        args = ("verify", "cluster", cluster.address, "--smoke", "none", "--timeout", "30")
        proc, _ = run_envcheck(*args)
        assert proc.returncode == ExitCode.FAIL, proc.stdout[-3000:] + proc.stderr[-2000:]
        lines = proc.stdout.splitlines()
        assert max(map(len, lines)) <= 100, proc.stdout
        assert len(lines) <= 40, proc.stdout  # 33 here; the whole report, skips included

        odd = re.escape(names["odd"])
        header = r"\W package\W+client\W+scheduler\W+3 workers\W+worker " + odd + r"\W+verdict\W"
        assert sum(bool(re.search(header, ln)) for ln in lines) == 1, proc.stdout
        ours = re.escape(importlib.metadata.version("msgpack"))
        row = rf"\W msgpack\W+{ours}\W+{ours}\W+{ours}\W+{re.escape(OTHER_MSGPACK)}\W+fail\W"
        assert sum(bool(re.search(row, ln)) for ln in lines) == 1, proc.stdout
        # the three identical workers: named once, in the legend above the table
        table = lines[next(i for i, ln in enumerate(lines) if ln.startswith("version skew")):]
        table = table[:next(i for i, ln in enumerate(table) if ln.startswith("└")) + 1]
        legend = [ln for ln in table if "3 workers = " in ln]
        assert len(legend) == 1, "\n".join(table)
        for name in SAME:
            assert sum(names[name] in ln for ln in table) == 1, "\n".join(table)

        proc, _ = run_envcheck(*args, env={"COLUMNS": "60"})
        assert proc.returncode == ExitCode.FAIL, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert max(map(len, proc.stdout.splitlines())) <= 60, proc.stdout
    finally:
        cluster.stop()
