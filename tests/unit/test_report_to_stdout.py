"""`--json -`, `--json /dev/stdout` and `--junit -` send the report down a real pipe, alone:
the table, the summary and a verb's product go to stderr then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envcheck.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
OLD, NEW = (str(ROOT / "locks" / f"pangeo-{n}.conda-lock.yml")
            for n in ("ml-2023.10", "pytorch-2023.05"))


def _envcheck(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    # stdout and stderr are pipes, as in `envcheck ... --json - | jq`
    return subprocess.run([sys.executable, "-m", "envcheck", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("name", ["-", "/dev/stdout"])
def test_json_goes_down_the_pipe_and_the_table_to_stderr(name: str) -> None:
    proc = _envcheck("diff", OLD, NEW, "--json", name)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # stdout holds the report and nothing else
    assert report["status"] == "pass" and report["results"][0]["check"] == "diff"
    assert "numpy" in proc.stderr  # the table, which a plain run prints on stdout


def test_junit_goes_down_the_pipe() -> None:
    proc = _envcheck("diff", OLD, NEW, "--junit", "-", "--quiet")
    assert proc.returncode == 0, proc.stderr
    suite = ET.fromstring(proc.stdout).find("testsuite")
    assert suite is not None and suite.get("tests") == "1"
    assert proc.stderr.startswith("PASS")


def test_a_product_goes_to_stderr_beside_a_json_report_on_stdout() -> None:
    proc = _envcheck("recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7",
                     "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "pass"
    assert "cudf" in proc.stderr and "channels:" in proc.stderr


def test_a_failed_run_writes_its_error_report_down_the_pipe() -> None:
    proc = _envcheck("diff", OLD, "/nonexistent.conda-lock.yml", "--json", "-")
    assert proc.returncode == ExitCode.BAD_INPUT
    assert json.loads(proc.stdout)["status"] == "error"
    assert "nonexistent" in proc.stderr


def test_both_reports_on_stdout_are_refused() -> None:
    proc = _envcheck("diff", OLD, NEW, "--json", "-", "--junit", "/dev/stdout")
    assert proc.returncode == ExitCode.BAD_INPUT and proc.stdout == ""
    assert "name the same file" in proc.stderr
