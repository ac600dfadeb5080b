"""envcheck install stopped by SIGINT or SIGTERM at any moment of its run writes its --json
report: the report's exit code is the process's, and a run stopped before it finished says so.
Ten moments spread over one whole run's span (read, fetch, extract, link, commit, report),
alternating the two signals, each a real process. A run starts when envcheck's handlers are in
place (the kernel lists SIGTERM as caught); before that the interpreter is still starting and
a signal acts as it does on any program."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.install_checks import install_cmd
from tests.support.report_schema import validated
from tests.support.small_channels import many_files, noarch_package, pixi_lock, records

pytestmark = pytest.mark.slow

MOMENTS = 10
SAYS = {
    130: "interrupted (SIGINT, Ctrl-C) before it finished",
    143: "terminated by SIGTERM before it finished",
}


def _start(lock: Path, tmp: Path, name: str) -> subprocess.Popen:
    cmd = install_cmd(lock, tmp / name / "env", tmp / name / "cache", "--json",
                      str(tmp / name / "r.json"))
    (tmp / name).mkdir()
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a runner started in the background ignores SIGINT: give it a terminal's default
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def _running(proc: subprocess.Popen) -> float:
    """When ``proc``'s signal handlers are envcheck's: SIGTERM caught (/proc/PID/status)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        caught = int(next(ln.split()[1] for ln in status.splitlines()
                          if ln.startswith("SigCgt:")), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return time.monotonic()
        time.sleep(0.001)
    raise AssertionError(f"envcheck never caught SIGTERM: {proc.communicate()}")


def test_an_install_stopped_at_any_moment_writes_its_json_report(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (b"tiny\n", 0o644, None)})
    noarch_package(root, "many", many_files(5000))
    lock = pixi_lock(tmp_path / "many.lock", root.resolve().as_uri(), records(root))
    whole = _start(lock, tmp_path, "whole")  # one whole run: the span the moments spread over
    started = _running(whole)
    out, err = whole.communicate(timeout=600)
    span = time.monotonic() - started
    assert whole.returncode == 0, out + err
    assert validated(tmp_path / "whole" / "r.json")["exit_code"] == 0
    seen = []
    for i in range(MOMENTS):
        sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
        proc = _start(lock, tmp_path, f"at{i}")
        try:
            time.sleep(max(0.0, _running(proc) + span * i / MOMENTS - time.monotonic()))
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        rc = proc.returncode
        where = f"moment {i} ({span * i / MOMENTS:.2f} s, {sig.name}): exit {rc}: {err}"
        assert rc in (0, 128 + sig), where  # finished (the signal came after its commit point)
        report = tmp_path / f"at{i}" / "r.json"
        assert report.is_file(), where
        data = validated(report)
        assert data["exit_code"] == rc and data["title"] == "envcheck install", where
        if rc:
            assert [r["message"] for r in data["results"]] == [SAYS[rc]], where
            assert err.count("\n") == 1 and "Traceback" not in err, where
        seen.append(rc)
    assert any(seen), seen  # at least one moment stopped a run before it finished
