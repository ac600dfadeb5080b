"""verify ray ended by SIGTERM: exit 143 (not Ray's sys.exit(15)), one line, and no process of
the local cluster it started left behind (Ray's agents outlive their raylet by a minute)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ray.conftest import RAY_ENV


def _session(sid: int) -> dict[int, bytes]:
    """pid -> cmdline of the running processes of session ``sid`` but its leader."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == sid:
            continue
        try:
            fields = (d / "stat").read_bytes().rsplit(b")", 1)[1].split()
            cmd = (d / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z" and int(fields[3]) == sid:
            out[int(d.name)] = cmd.replace(b"\0", b" ").strip()
    return out


def _wait(what, seconds: float):  # noqa: ANN001, ANN202
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = what()
        if found:
            return found
        time.sleep(0.05)
    return what()


@pytest.mark.parametrize("phase", ["starting", "started"])
def test_sigterm_exits_143_and_leaves_no_ray_process(tmp_path: Path, phase: str) -> None:
    report = tmp_path / "r.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "verify", "ray", "--timeout", "300",
         "--json", str(report)],
        env={**os.environ, **RAY_ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,  # its session holds every process Ray starts for it
    )
    try:
        # starting: the GCS is up, ray.init has not returned; started: the raylet and its
        # agents run (the dashboard and runtime-env agents are the ones that linger)
        wanted = b"gcs_server" if phase == "starting" else b"ray::RuntimeEnvAgent"
        assert _wait(lambda: any(wanted in c for c in _session(p.pid).values()), 240), \
            _session(p.pid)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 143, err
        assert err.decode().strip().splitlines()[-1] == "envcheck: terminated (SIGTERM)", err
        left = _wait(lambda: not _session(p.pid), 5.0)
        assert left is True, _session(p.pid)
    finally:
        for pid in _session(p.pid):  # what this test's run started, if it failed
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
            p.wait(10)
