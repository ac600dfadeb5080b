"""Run py-rattler's unpacking and linking in a child process (envcheck/provision/_link_child.py).

The child may abort (a Rust panic), fill the disk or be interrupted: envcheck stays alive to
end it and remove what it wrote. `envcheck install` forks it before its flags are parsed
(``prestart``, from envcheck.early's EARLY: this module imports little, and the child does its
own imports), then has it read the lock (``prestart`` with the lock) and makes its plan of
what the child read (``prestarted_reading``): py-rattler is imported in the child only. The
install's ``Linker`` adopts the child and sends it the plan, the first job queued behind
it; else it is forked when ``Linker`` is entered, before the downloads start their threads,
with the plan in hand (no interpreter start-up, no imports). A process that already has
other threads than envcheck's signal resender (a progress bar, py-rattler's async runtime
after a solve in the same process) starts a fresh interpreter instead. On a way out of the
block by an exception the child is killed and reaped first; on the normal way out it has
answered its last job and leaves on EOF, reaped later (``reap_left``: the next install or
prestart) and not waited for.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from envcheck import interrupts
from envcheck.errors import EnvcheckError
from envcheck.fds import write_all

TYPE_CHECKING = False  # typing is not imported: the CLI forks the child before the imports
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any


def _fork_safe() -> bool:
    """Every thread of this process but the caller is one that holds nothing across a fork
    (interrupts' signal resender, which every CLI run starts): forking it is safe. Any other
    thread (a library's, a progress bar's, py-rattler's async runtime) may hold a lock the
    child would wait on for ever."""
    try:
        tasks = {int(t) for t in os.listdir("/proc/self/task")}
    except (OSError, ValueError):
        return False
    return tasks <= {threading.get_native_id(), *interrupts.fork_safe_threads()}


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _capture() -> Any:
    """An anonymous file for the child's stderr (closed with the Linker)."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("envcheck-linker-stderr", os.MFD_CLOEXEC), "w+b")
    import tempfile

    return tempfile.TemporaryFile()  # noqa: SIM115


def _fork_child(plan: Any, cache: str | None) -> tuple[int, int, int, Any]:
    """(pid, jobs pipe, answers pipe, stderr capture) of a linker child forked now; ``plan``
    None: it gets the plan from a job (``{"op": "plan"}``). The child imports what it needs
    itself (nothing, when this process has imported _link_child)."""
    err = _capture()
    jobs_r, jobs_w = os.pipe()
    out_r, out_w = os.pipe()
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():  # Python 3.12 warns of any other thread: see _fork_safe
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            os.close(jobs_w)
            os.close(out_r)
            from envcheck.provision import _link_child

            _link_child.serve(plan, jobs_r, out_w, err.fileno(), parent, cache)
        finally:
            os._exit(1)  # serve leaves through os._exit(0): this only if the import failed
    os.close(jobs_r)
    os.close(out_w)
    return pid, jobs_w, out_r, err


# a child prestart() forked, not yet adopted: pid, jobs pipe, answers pipe, stderr capture,
# whether it reads a lock ahead (and sends what it read: prestarted_reading)
_EARLY: list[tuple[int, int, int, Any, bool]] = []


def prestart(
    lock: Path | None = None, platform: str | None = None, cache: Path | None = None
) -> None:
    """Fork the linker child now, unless one is forked already: it imports asyncio and
    py-rattler while this process does its own work (`envcheck install` calls this before it
    parses its flags: envcheck.early's EARLY). With ``lock``, the child reads it for
    ``platform`` (None: this machine's) as soon as py-rattler is in, sends what it read
    (``prestarted_reading``) and indexes ``cache``. The install's Linker adopts the child and
    sends it the plan, whose sha256 must be that of the lock the child read. Nothing happens
    in a process that may not fork (see _fork_safe). ``discard_prestarted`` ends a child no
    install took."""
    reap_left()
    for _ in range(2):  # a prestarted child found dead is replaced, once
        if not _EARLY:
            if not _fork_safe():
                return
            _EARLY.append((*_fork_child(None, None), False))
        pid, jobs_w, out_r, err, pending = _EARLY[0]
        if lock is None or pending:
            return
        job = {"op": "ahead", "lock": str(lock.absolute()), "platform": platform,
               "cache": None if cache is None else str(cache)}  # fmt: skip
        try:
            _write_line(jobs_w, job)
        except OSError:  # the child is gone
            discard_prestarted()
            continue
        _EARLY[0] = (pid, jobs_w, out_r, err, True)
        return


READ_AHEAD_WAIT_S = 60.0  # then envcheck reads the lock itself


def reading_pending() -> bool:
    """A prestarted child reads the lock ahead, and its reading has not been taken."""
    return bool(_EARLY and _EARLY[0][4])


def prestarted_reading() -> dict[str, Any] | None:
    """What the prestarted child read of the lock prestart named: ``{"sha256", "platform",
    "rows"}`` (lockfile.rattler_read's rows), or None when there is no such child, or it could
    not read the lock (the caller reads the lock itself). A child that died or did not answer
    within READ_AHEAD_WAIT_S is discarded (the install's Linker starts another). BadInput when
    the child refused the lock (its one line)."""
    import json

    from envcheck.errors import BadInput

    if not reading_pending():
        return None
    out_r, data = _EARLY[0][2], b""
    _EARLY[0] = (*_EARLY[0][:4], False)  # one reading: taken now, whatever it holds
    deadline = time.monotonic() + READ_AHEAD_WAIT_S
    while not data.endswith(b"\n"):  # the child writes nothing else before its first job
        left = deadline - time.monotonic()
        ready = select.select([out_r], [], [], max(left, 0.0))[0]
        chunk = os.read(out_r, 1 << 16) if ready else b""
        if not chunk:  # gone, or silent past the deadline: a half-read line cannot be resumed
            discard_prestarted()
            return None
        data += chunk
    reading = json.loads(data[1:])
    if "error" in reading:
        raise BadInput(reading["error"])
    return None if "unread" in reading else reading


_LEFT: list[int] = []  # children that answered their last job and are leaving: not reaped yet


def reap_left() -> None:
    """Reap the children that have left since a Linker let them go (none is waited for: a
    CLI install ends while its child is still tearing down, and init reaps it)."""
    for pid in list(_LEFT):
        try:
            done = os.waitpid(pid, os.WNOHANG)[0]
        except ChildProcessError:
            done = pid
        if done:
            _LEFT.remove(pid)


def discard_prestarted() -> None:
    """Kill and reap a prestarted child no Linker adopted (a no-op install, a bad lock);
    reap the children that have left (reap_left)."""
    reap_left()
    while _EARLY:
        pid, jobs_w, out_r, err, _ = _EARLY.pop()
        os.close(jobs_w)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(out_r)
        err.close()


def _write_line(fd: int, job: dict[str, Any]) -> None:
    import json

    write_all(fd, (json.dumps(job) + "\n").encode())


class Linker:
    """One linker child, forked with ``plan`` in hand (or adopted from ``prestart``); ``run``
    sends it a job and waits. ``cache``: the install's cache directory, which the child gets
    ready to link from."""

    def __init__(self, plan: Any, cache: Path | None = None) -> None:
        self.plan = plan
        self.cache = None if cache is None else str(cache)

    def __enter__(self) -> Linker:
        self.code: int | None = None
        self.jobs_w_closed = False
        self._buf = b""
        self._plan_sent = False  # the plan job sent to a child without a plan: answer unread
        reap_left()
        if _EARLY:
            self.pid, self.jobs_w, self.out_r, self.err, _ = _EARLY.pop()
        elif _fork_safe():
            # imported here, once per process: every later install's child has it
            from envcheck.provision import _link_child  # noqa: F401

            self.pid, self.jobs_w, self.out_r, self.err = _fork_child(self.plan, self.cache)
            return self  # forked with the plan in hand
        else:
            self._spawn()
        plan = self.plan
        self._plan_sent = self._send({
            "op": "plan", "lock": str(plan.lock.absolute()), "platform": plan.platform,
            "sha256": plan.lock_sha256, "cache": self.cache,
        })  # fmt: skip
        return self

    def _spawn(self) -> None:
        """A fresh interpreter, which gets the plan as its first job, as a prestarted child
        does (it reads the lock again, its sha256 checked): a process with other threads (a
        progress bar, py-rattler's async runtime) cannot be forked safely."""
        import subprocess

        self.err = _capture()
        jobs_r, self.jobs_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self._proc = subprocess.Popen(  # kept so the Popen object does not outlive the child
            [sys.executable, "-m", "envcheck.provision._link_child"],
            stdin=jobs_r,
            stdout=out_w,
            stderr=self.err,
            env=dict(os.environ, ENVCHECK_LINK_PARENT=str(os.getpid())),
            pass_fds=(),
        )
        self.pid = self._proc.pid
        os.close(jobs_r)
        os.close(out_w)

    def _reap(self, block: bool) -> int | None:
        if self.code is None:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:  # every job answered: told there are no more, the child leaves
                self.finish()
                if self._reap(False) is None:
                    _LEFT.append(self.pid)  # reaped by reap_left, not waited for
                    return
            self.stop()
        finally:
            os.close(self.out_r)
            self.err.close()

    def finish(self) -> None:
        """No more jobs: the child, between jobs, leaves at once (EOF), while this process
        goes on; the block's end reaps it."""
        if not self.jobs_w_closed:
            os.close(self.jobs_w)
            self.jobs_w_closed = True

    def stop(self) -> None:
        """Kill the child now and wait for it: nothing it does outlives this call."""
        self.finish()
        if self._reap(False) is None:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)  # its session: the child and its own
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap(True)

    def run(
        self, job: dict[str, Any], what: str, on_tick: Callable[[int], None] = lambda i: None
    ) -> None:
        """One job; EnvcheckError (DiskFull for ENOSPC) when it fails or the child dies.

        ``what`` names the work in messages ("linking into /opt/env"); ``on_tick`` is called
        per package done, with its index in the plan's records when linking (else -1).
        """
        sent = self._send(job)  # queued behind the plan, if its answer is still unread
        if self._plan_sent:  # the adopted child's answer to its plan first
            self._plan_sent = False
            self._check(self._answer(lambda i: None), what)
        self._check(self._answer(on_tick) if sent else {}, what)

    def _check(self, outcome: dict[str, Any], what: str) -> None:
        """Return when ``outcome`` is a success; else raise what run() documents."""
        if outcome.get("ok"):
            return
        if outcome.get("enospc"):
            from envcheck.provision.fetch import DiskFull

            raise DiskFull(f"disk full {what}: {outcome['error'].splitlines()[0]}")
        if outcome:
            first = outcome["error"].splitlines()[0]
            raise EnvcheckError(f"{what} failed: {first}", detail=outcome["error"])
        code = self._reap(True) or 0
        self.err.seek(0)
        tail = self.err.read()[-4000:].decode(errors="replace")
        last = [x for x in tail.strip().splitlines() if x.strip()]
        how = _signal_name(code) if code < 0 else f"exit {code}"
        hint = f": {last[0][:300]}" if last else ""
        raise EnvcheckError(f"{what} failed: the linker process died ({how}){hint}", detail=tail)

    def _send(self, job: dict[str, Any]) -> bool:
        """Write one job line; False when the child is gone."""
        try:
            _write_line(self.jobs_w, job)
        except BrokenPipeError:
            return False
        return True

    def _answer(self, on_tick: Callable[[int], None]) -> dict:
        """The next outcome line (ticks passed to ``on_tick`` meanwhile); {} at EOF."""
        import json

        while True:
            while b"\n" in self._buf:
                line, _, self._buf = self._buf.partition(b"\n")
                if line[:1] == b"+":
                    on_tick(int(line[1:] or -1))
                elif line[:1] == b"=":
                    continue  # a reading of the lock ahead that prestarted_reading did not take
                elif line:
                    return json.loads(line)
            select.select([self.out_r], [], [])  # a signal's exception leaves from here
            chunk = os.read(self.out_r, 1 << 16)
            if not chunk:
                return {}
            self._buf += chunk
