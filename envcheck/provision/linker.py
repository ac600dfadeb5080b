"""Run py-rattler's unpacking and linking in a child process (envcheck/provision/_link_child.py).

The child may abort (a Rust panic), fill the disk or be interrupted: envcheck stays alive to
end it and remove what it wrote. On any way out of ``run`` the child is dead.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from envcheck.errors import EnvcheckError
from envcheck.provision.fetch import DiskFull


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run(job: dict[str, Any], what: str, on_tick: Callable[[], None] = lambda: None) -> None:
    """Run one job in the child; EnvcheckError (DiskFull for ENOSPC) when it fails or dies.

    ``what`` names the work in messages ("linking into /opt/env").
    """
    env = dict(os.environ, PYTHONUNBUFFERED="1", ENVCHECK_LINK_PARENT=str(os.getpid()))
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "envcheck.provision._link_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches envcheck, which ends it
        )
        try:
            outcome = _talk(proc, job, on_tick)
        finally:
            if proc.poll() is None and not _ended(proc):
                _kill(proc)
        err.seek(0)
        tail = err.read()[-4000:].decode(errors="replace")
    _judge(proc.returncode, outcome, what, tail)


def _ended(proc: subprocess.Popen) -> bool:
    try:
        proc.wait(timeout=5)  # it answered and is leaving through os._exit
    except subprocess.TimeoutExpired:
        return False
    return True


def _talk(proc: subprocess.Popen, job: dict[str, Any], on_tick: Callable[[], None]) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
    except BrokenPipeError:
        return {}
    fd, buf = proc.stdout.fileno(), b""
    while True:
        select.select([fd], [], [])  # a signal's exception leaves from here or from read
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return {}
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line == b"+":
                on_tick()
            elif line:
                return json.loads(line)


def _judge(code: int | None, outcome: dict, what: str, stderr_tail: str) -> None:
    if outcome.get("ok"):
        return
    if outcome.get("enospc"):
        raise DiskFull(f"disk full {what}: {outcome['error'].splitlines()[0]}")
    if outcome:
        first = outcome["error"].splitlines()[0]
        raise EnvcheckError(f"{what} failed: {first}", detail=outcome["error"])
    last = [x for x in stderr_tail.strip().splitlines() if x.strip()]
    how = _signal_name(code) if code is not None and code < 0 else f"exit {code}"
    hint = f": {last[0][:300]}" if last else ""
    raise EnvcheckError(f"{what} failed: the linker process died ({how}){hint}", detail=stderr_tail)
