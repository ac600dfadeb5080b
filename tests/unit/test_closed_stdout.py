"""A reader that stops reading (`envcheck ... | head -1` in a prolog) changes nothing: the
exit code is the verdict's, the --json report is written, nothing more is said. The pipe is
real: head has read its line and gone before envcheck writes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAILING = ["verify", "node", "--no-plugins", "--expect-gpus", "4096"]  # FAIL on any machine


@pytest.mark.parametrize(("argv", "code"), [
    ([*FAILING, "-v"], 2), ([*FAILING, "-q"], 2), ([*FAILING, "--nagios"], 2),
    (["slurm", "script"], 0),
], ids=["table", "quiet", "nagios", "product"])
def test_a_closed_stdout_keeps_the_verdicts_exit_code_and_the_report(tmp_path, argv, code):
    report = tmp_path / "r.json"
    envcheck = shlex.join([sys.executable, "-m", "envcheck", *argv, "--json", str(report)])
    # head reads "first" and exits while envcheck starts: every write of envcheck's hits a
    # pipe nobody reads
    line = f'{{ echo first; {envcheck}; echo "rc=$?" >&2; }} | head -1'
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout == "first\n"
    assert done.stderr.splitlines()[-1] == f"rc={code}", done.stderr
    assert "Traceback" not in done.stderr and "cannot be written" not in done.stderr
    assert json.loads(report.read_text())["exit_code"] == code
