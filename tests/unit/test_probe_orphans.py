"""Probe children die with their parent: `verify node`'s import probe, its child killed by the
kernel within a second of envcheck's SIGKILL (PR_SET_PDEATHSIG, verify/facts/orphans.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.verify.facts.orphans import dies_with_parent
from tests.support.deadlines import HANG

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _alive(pid: int) -> bool:
    """Running, not a zombie (a reaped or unreaped corpse holds no import)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(what, seconds: float):  # noqa: ANN001, ANN202
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = what()
        if found:
            return found
        time.sleep(0.02)
    return None


def test_the_import_probe_dies_within_a_second_of_a_sigkilled_envcheck(tmp_path: Path) -> None:
    (tmp_path / "sleepy_probe_module.py").write_text(
        "import pathlib, time\n"
        f"pathlib.Path({str(tmp_path / 'started')!r}).touch()\n"
        "time.sleep(120)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    envcheck = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "verify", "node", "--import", "sleepy_probe_module",
         "--probe-timeout", "120"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_for(lambda: (tmp_path / "started").exists(), 60), "the probe never started"
        probes = [p for p in _children(envcheck.pid)
                  if b"sleepy_probe_module" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(probes) == 1, _children(envcheck.pid)
        envcheck.send_signal(signal.SIGKILL)
        envcheck.wait(10)
        started = time.monotonic()
        assert _wait_for(lambda: not _alive(probes[0]), HANG), "the probe outlived envcheck"
        assert time.monotonic() - started < HANG  # not the probe's own 120 s
    finally:
        envcheck.kill()
        envcheck.wait(10)


def test_a_child_whose_parent_is_already_gone_ends_at_once(tmp_path: Path) -> None:
    # the parent named in the prologue is this process, but the child's parent is a shell that
    # exits before the child runs its prologue: the child must not run on
    marker = tmp_path / "ran"
    script = dies_with_parent(f"import pathlib; pathlib.Path({str(marker)!r}).touch()")
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -c "$1"', sys.executable, script],
        capture_output=True, timeout=60, check=False,
    )
    # sh execs python: python's parent is this process, the prologue lets it run
    assert done.returncode == 0 and marker.exists(), done.stderr
    marker.unlink()
    done = subprocess.run(
        ["sh", "-c", '"$0" -c "$1"; true', sys.executable, script],
        capture_output=True, timeout=60, check=False,
    )
    # python is the shell's child, not this process's: the parent it was started for is
    # not its parent, so it exits before the script
    assert done.returncode == 0 and not marker.exists(), done.stderr
