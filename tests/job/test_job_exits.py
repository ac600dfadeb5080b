"""Every way out of verify job reports: a rank that hangs (SIGSTOP), SIGTERM and SIGINT to rank
0, an argument error: rank 0's --json/--junit carry an error result naming what stopped it, and
it ends within the bound docs/verify-job.md states. Real ranks: separate processes started as
pdsh or ssh loops start them (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.deadlines import HANG
from tests.support.ranks import arrived, reached, start_ranks

pytestmark = pytest.mark.slow
pytest.importorskip("torch.distributed")

ENVCHECK = [sys.executable, "-m", "envcheck"]  # the code under test, not an installed script
TIMEOUT = 20  # --timeout (ranks start slowly on busy cores)


def _start(world: int, ranks: range, tmp_path: Path, slow: int = -1) -> tuple[int, list]:
    return start_ranks(ENVCHECK, world, ranks, tmp_path, TIMEOUT, slow)


def _errors(path: Path) -> list[dict]:
    return [r for r in json.loads(path.read_text())["results"] if r["status"] == "error"]


def _junit_errors(path: Path) -> list[str]:
    return [e.get("message", "") + (e.text or "") for e in ET.parse(path).iter("error")]


def _end(procs: list) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()


def test_a_stopped_rank_is_named_in_json_and_junit_within_the_bound(tmp_path):
    procs, out, err, took = _hang_in_the_gather(tmp_path, 1, TIMEOUT)
    assert procs[0].returncode == 3, out + err
    assert took < HANG, took  # --timeout held: its 60 s default would not
    named = [r for r in _errors(tmp_path / "r0.json") if r["node"] == "rank 1"]
    assert named and f"pid {procs[1].pid}" in named[0]["message"], named
    assert any(f"pid {procs[1].pid}" in e for e in _junit_errors(tmp_path / "r0.xml"))


def _signal_rank0(tmp_path, sig: signal.Signals) -> tuple[subprocess.Popen, str, str]:
    """Rank 0 of two, waiting in the roll call for a rank 1 that never comes, sent `sig`:
    (rank 0's process, its stdout, its stderr)."""
    port, procs = _start(2, range(1), tmp_path)
    try:
        arrived(port, 0)
        procs[0].send_signal(sig)
        out, err = procs[0].communicate(timeout=TIMEOUT + 30)
    finally:
        _end(procs)
    return procs[0], out, err


def test_sigterm_to_rank_0_mid_run_is_143_and_a_report(tmp_path):
    rank0, out, err = _signal_rank0(tmp_path, signal.SIGTERM)
    assert rank0.returncode == 143, out + err
    errors = _errors(tmp_path / "r0.json")
    assert errors and "SIGTERM" in errors[0]["message"], errors
    assert any("SIGTERM" in e for e in _junit_errors(tmp_path / "r0.xml"))


def test_sigint_to_rank_0_mid_run_is_130_and_a_report(tmp_path):
    rank0, out, err = _signal_rank0(tmp_path, signal.SIGINT)
    assert rank0.returncode == 130, out + err
    errors = _errors(tmp_path / "r0.json")
    assert errors and ("interrupted" in errors[0]["message"] or "SIGINT" in errors[0]["message"])


def test_an_argument_error_is_4_and_the_json_names_it(tmp_path):
    out = tmp_path / "out.json"
    p = subprocess.run([*ENVCHECK, "verify", "job", "--timeout", "x", "--json", str(out)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 4, p.stderr
    errors = _errors(out)
    assert errors and "--timeout" in errors[0]["message"], errors
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_rank_whose_rank_0_hangs_ends_in_time_with_one_line(tmp_path):
    procs, out, err, took = _hang_in_the_gather(tmp_path, 0, TIMEOUT)
    assert procs[1].returncode == 3, out + err
    assert took < HANG, took  # --timeout held: its 60 s default would not
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "rank 1/2" in lines[0] and "rank 0" in lines[0], err


def test_sigterm_inside_a_gloo_collective_ends_the_rank_with_143_and_a_report(tmp_path):
    """Rank 0 inside the facts gather (rank 1 sits in a minute-long import probe), with a
    --timeout far past the deadline here: the collective alone would hold it two minutes.
    SIGTERM ends it with 143 and a report naming the signal and the step."""
    port, procs = start_ranks(ENVCHECK, 2, range(2), tmp_path, 150, slow=1)
    try:
        arrived(port, 1)
        time.sleep(2)  # rank 0 is in the gather, waiting for rank 1
        t0 = time.monotonic()
        procs[0].send_signal(signal.SIGTERM)
        out, err = procs[0].communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        _end(procs)
    print(f"SIGTERM to rank 0 inside the gather: exit {procs[0].returncode} after {took:.2f} s")
    assert procs[0].returncode == 143, out + err
    errors = _errors(tmp_path / "r0.json")
    assert errors and errors[0]["message"].startswith(
        "terminated by SIGTERM during gathering every rank's facts"), errors
    assert err.strip().splitlines()[-1].endswith(
        "terminated by SIGTERM during gathering every rank's facts"), err


def _hang_in_the_gather(tmp_path, stopped: int,
                        timeout: int = 10) -> tuple[list, str, str, float]:
    """Two ranks with --timeout `timeout`, rank `stopped` slowed in its import probe: once the
    other rank marked reaching the gather (the stopped one is then in its probe), SIGSTOP it.
    (The processes, the other rank's stdout and stderr, seconds from the stop until it ended.)"""
    port, procs = start_ranks(ENVCHECK, 2, range(2), tmp_path, timeout, slow=stopped)
    try:
        reached(port, "gather", 1 - stopped)
        t0 = time.monotonic()
        os.killpg(procs[stopped].pid, signal.SIGSTOP)
        out, err = procs[1 - stopped].communicate(timeout=HANG + 30)
        took = time.monotonic() - t0
    finally:
        _end(procs)
    return procs, out, err, took


def test_a_hung_rank_0_ends_another_rank_at_timeout_plus_the_grace(tmp_path):
    """Rank 0 stopped while rank 1 waits in the gather: rank 1's gather gives up, and its wait
    for rank 0's verdict hangs in the stopped rank's store, so its watchdog ends it at the
    gather's --timeout + 2 s, with one line stating that limit; exit 3."""
    procs, out, err, took = _hang_in_the_gather(tmp_path, 0)
    print(f"rank 0 stopped in the gather: rank 1 ended after {took:.2f} s (--timeout 10)")
    assert procs[1].returncode == 3, out + err
    assert took < HANG, took  # a hang catcher: the line below states the limit applied
    lines = err.strip().splitlines()
    assert lines == ["envcheck verify job: rank 1/2: error: waiting for rank 0's verdict on "
                     "gathering every rank's facts did not finish within its limit (--timeout "
                     "10 s + 2 s grace): the watchdog ended this rank"], err


def test_a_hung_rank_is_named_by_rank_0_within_the_steps_timeout(tmp_path):
    """Rank 1 stopped while rank 0 waits in the gather: rank 0's gather gives up before the
    step's --timeout, it names rank 1 (heartbeat stopped) with the limit the step ran under,
    writes its report and exits 3 without waiting for the stopped rank to read the verdict."""
    procs, out, err, took = _hang_in_the_gather(tmp_path, 1)
    print(f"rank 1 stopped in its probe: rank 0 ended after {took:.2f} s (--timeout 10)")
    assert procs[0].returncode == 3, out + err
    assert took < HANG, took
    [named] = [r for r in _errors(tmp_path / "r0.json") if r["node"] == "rank 1"]
    assert named["message"] == (
        f"rank 1 (host {socket.gethostname()}, pid {procs[1].pid}) stopped answering during "
        "gathering every rank's facts (its heartbeat stopped: it died or hangs; the step's "
        "limit: --timeout 10 s)"), named
    assert "watchdog" not in out + err  # the step's own bounds ended it, not the last resort
