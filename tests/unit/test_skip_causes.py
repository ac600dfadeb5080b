"""On a machine without GPUs the default `verify node` report says each cause of its skips
once: every GPU check skips with one message (why there is no GPU), and skips whose messages
name one cause first ("not installed: TensorFlow", "not installed: UCX") share a line. The
whole report fits in 15 lines: for a report built here from described facts, and for the real
`verify node` of this machine when it has no GPU."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from envcheck.report import Report, Result, Status, render_table
from envcheck.report_text import by_cause
from envcheck.verify.node.checks import run_node_checks
from tests.support.factories import expect, no_driver_node

ROOT = Path(__file__).resolve().parents[2]
MOST = 15


def _text(report: Report, width: int = 80) -> list[str]:
    out = io.StringIO()
    render_table(report, Console(file=out, width=width, color_system=None))
    return out.getvalue().splitlines()


def test_skips_that_name_one_cause_are_that_cause_alone() -> None:
    skips = [
        Result("tensorflow", Status.SKIP, "not installed: TensorFlow"),
        Result("ucx", Status.SKIP, "not installed: UCX, and not expected (--expect-ucx)"),
        Result("gpus", Status.SKIP, "no GPU: NVML did not start"),
        Result("ecc", Status.SKIP, "no GPU: NVML did not start"),
        Result("infiniband", Status.SKIP, "/sys/class/infiniband absent: no InfiniBand"),
    ]
    assert [r.message for r in by_cause(skips)] == [
        "not installed", "not installed",  # two details, one cause
        "no GPU: NVML did not start", "no GPU: NVML did not start",  # one message: whole
        "/sys/class/infiniband absent: no InfiniBand",  # alone with its cause: whole
    ]
    assert [r.check for r in by_cause(skips)] == [r.check for r in skips]


def test_a_gpu_less_node_described_here_reports_each_cause_once_in_15_lines() -> None:
    results = run_node_checks(no_driver_node(), expect(), node="cpu", plugins=False)
    lines = _text(Report("envcheck verify node", tuple(results)))
    assert len(lines) <= MOST, "\n".join(lines)
    said = [ln for ln in lines if " skipped: " in ln]
    causes = {ln.split(" skipped: ", 1)[1].split(" (")[0].split(":")[0] for ln in said}
    assert len(said) == len(causes)  # one line per cause
    assert any(ln.lstrip().startswith(f"{n} skipped: no GPU: NVML did not start")
               for ln in said for n in range(8, 40))
    assert sum(int(ln.split()[0]) for ln in said) == sum(
        r.status is Status.SKIP for r in results)  # every skip counted once


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists(),
                    reason="this machine has GPUs: its report is not the GPU-less one")
@pytest.mark.parametrize("columns", [None, "80"])
def test_the_real_verify_node_here_fits_in_15_lines(columns: str | None) -> None:
    """Piped, as wide as COLUMNS says, else 100 (envcheck.width)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(PYTHONPATH=str(ROOT), **({"COLUMNS": columns} if columns else {}))
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node"], capture_output=True, text=True,
        env=env, timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(lines) <= MOST, done.stdout
    assert max(map(len, lines)) <= int(columns or 100), done.stdout
    assert sum(" skipped: no GPU" in ln for ln in lines) == 1, done.stdout
