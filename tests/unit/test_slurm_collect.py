"""What `slurm script --submit` reads back from --shared-dir (the job's reason, its log's last
lines, --then's exit code) goes through open_input: a FIFO nobody writes, a kmsg device node
or a link into /proc planted under those names is named in one line, never read (a 60 s
deadline catches a hang). The job's report.json: tests/unit/test_input_paths.py's readers."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from envcheck.errors import BadInput, EnvcheckError
from envcheck.report import Report
from envcheck.slurm.submit import collect
from tests.unit.test_input_paths import SAYS, planted

KINDS = ["fifo", "mknod", "kmsg-link"]


def _collect(run_dir: Path, log: Path) -> Report | Exception:
    box: dict[str, Report | Exception] = {}

    def target() -> None:
        try:
            box["out"] = collect("42", {"JobState": "FAILED"}, run_dir, log, 1.0)
        except Exception as e:  # noqa: BLE001 - the test judges what came out
            box["out"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "collect still reading after 60 s"
    return box["out"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_log_is_named_not_read(tmp_path, kind):
    run_dir = tmp_path / "42"
    run_dir.mkdir()
    log = tmp_path / "slurm-42.out"
    planted(tmp_path, kind).rename(log)
    out = _collect(run_dir, log)
    assert isinstance(out, EnvcheckError) and "\n" not in str(out), out
    assert "before verify reported: (the job's log" in str(out) and SAYS[kind] in str(out), out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["failed", "then.rc"])
def test_a_planted_note_is_refused_in_one_line(tmp_path, kind, name):
    run_dir = tmp_path / "42"
    run_dir.mkdir()
    if name == "then.rc":  # a report, so that --then's exit code is what is read
        (run_dir / "report.json").write_text(json.dumps(
            {"title": "envcheck verify job", "results": [], "measurements": []}))
    planted(run_dir, kind).rename(run_dir / name)
    out = _collect(run_dir, tmp_path / "slurm-42.out")
    assert isinstance(out, BadInput) and "\n" not in str(out), out
    assert str(run_dir / name) in str(out) and SAYS[kind] in str(out), out


def test_a_log_tail_is_its_last_lines(tmp_path):
    run_dir = tmp_path / "42"
    run_dir.mkdir()
    log = tmp_path / "slurm-42.out"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))  # past TAIL_BYTES
    out = _collect(run_dir, log)
    assert isinstance(out, EnvcheckError), out
    assert str(out).endswith("line 99995 | line 99996 | line 99997 | line 99998 | line 99999")
