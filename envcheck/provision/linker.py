"""Run py-rattler's unpacking and linking in a child process (envcheck/provision/_link_child.py).

The child may abort (a Rust panic), fill the disk or be interrupted: envcheck stays alive to
end it and remove what it wrote. It is started early (``Linker`` as a context manager), so its
imports overlap with the downloads; on any way out of the block the child is dead.
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
from types import TracebackType
from typing import Any

from envcheck.errors import EnvcheckError
from envcheck.provision.fetch import DiskFull


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Linker:
    """One linker child; ``run`` sends it a job and waits for the outcome."""

    def __enter__(self) -> Linker:
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in __exit__
        env = dict(os.environ, PYTHONUNBUFFERED="1", ENVCHECK_LINK_PARENT=str(os.getpid()))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "envcheck.provision._link_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches envcheck, which ends it
        )
        self._buf = b""
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None and self.proc.stdin is not None:
                self.proc.stdin.close()  # EOF: it leaves through os._exit
                self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    self.proc.kill()
                self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout, self.err):
                if f is not None:
                    f.close()

    def run(
        self, job: dict[str, Any], what: str, on_tick: Callable[[], None] = lambda: None
    ) -> None:
        """One job; EnvcheckError (DiskFull for ENOSPC) when it fails or the child dies.

        ``what`` names the work in messages ("linking into /opt/env").
        """
        outcome = self._talk(job, on_tick)
        if outcome.get("ok"):
            return
        if outcome.get("enospc"):
            raise DiskFull(f"disk full {what}: {outcome['error'].splitlines()[0]}")
        if outcome:
            first = outcome["error"].splitlines()[0]
            raise EnvcheckError(f"{what} failed: {first}", detail=outcome["error"])
        code = self.proc.wait()
        self.err.seek(0)
        tail = self.err.read()[-4000:].decode(errors="replace")
        last = [x for x in tail.strip().splitlines() if x.strip()]
        how = _signal_name(code) if code < 0 else f"exit {code}"
        hint = f": {last[0][:300]}" if last else ""
        raise EnvcheckError(f"{what} failed: the linker process died ({how}){hint}", detail=tail)

    def _talk(self, job: dict[str, Any], on_tick: Callable[[], None]) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {}
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, _, self._buf = self._buf.partition(b"\n")
                if line == b"+":
                    on_tick()
                elif line:
                    return json.loads(line)
            select.select([fd], [], [])  # a signal's exception leaves from here or from read
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return {}
            self._buf += chunk
