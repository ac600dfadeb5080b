"""Run py-rattler's unpacking and linking in a child process (envcheck/provision/_link_child.py).

The child may abort (a Rust panic), fill the disk or be interrupted: envcheck stays alive to
end it and remove what it wrote. The install's ``Linker`` starts it when the block is entered,
before the downloads start their threads: forked with the plan in hand, or, in a process that
already has other threads than envcheck's signal resender (a progress bar, py-rattler's async
runtime after a solve in the same process), a fresh interpreter that gets the plan as its first
job. On a way out of the block by an exception the child is killed and reaped first; on the
normal way out it has answered its last job, leaves on EOF and is reaped.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from envcheck import interrupts
from envcheck.errors import EnvcheckError
from envcheck.fds import write_all
from envcheck.provision import _link_child
from envcheck.provision.validate import UnsafePackage

TYPE_CHECKING = False
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
    """(pid, jobs pipe, answers pipe, stderr capture) of a linker child forked now, with
    ``plan`` in hand."""
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
            _link_child.serve(plan, jobs_r, out_w, err.fileno(), parent, cache)
        finally:
            os._exit(1)  # serve leaves through os._exit(0): this only if it raised first
    os.close(jobs_r)
    os.close(out_w)
    return pid, jobs_w, out_r, err


def _write_line(fd: int, job: dict[str, Any]) -> None:
    import json

    write_all(fd, (json.dumps(job) + "\n").encode())


class JobFailed(EnvcheckError):
    """The child ran a job and answered that it failed (py-rattler raised): not a death."""


class Linker:
    """One linker child, started when the block is entered; ``run`` sends it a job and waits.
    ``cache``: the install's cache directory, which the child gets ready to link from."""

    def __init__(self, plan: Any, cache: Path | None = None) -> None:
        self.plan = plan
        self.cache = None if cache is None else str(cache)

    def __enter__(self) -> Linker:
        self.code: int | None = None
        self.jobs_w_closed = False
        self._buf = b""
        self._plan_sent = False  # the plan job sent to a started child: answer unread
        if _fork_safe():
            self.pid, self.jobs_w, self.out_r, self.err = _fork_child(self.plan, self.cache)
            return self  # forked with the plan in hand
        self._spawn()
        plan = self.plan
        self._plan_sent = self._send({
            "op": "plan", "lock": str(plan.lock.absolute()), "platform": plan.platform,
            "sha256": plan.lock_sha256, "cache": self.cache,
        })
        return self

    def _spawn(self) -> None:
        """A fresh interpreter, which gets the plan as its first job (it reads the lock again,
        its sha256 checked): a process with other threads (a progress bar, py-rattler's async
        runtime) cannot be forked safely."""
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
            try:
                pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:  # reaped by an earlier wait whose result a signal cut
                self.code = -signal.SIGKILL  # off: it has ended; its status is lost (said as
                return self.code  # killed: only an interrupted run gets here)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:  # every job answered: told there are no more, the child leaves
                self.finish()
                try:
                    self._reap(True)
                except BaseException:  # a signal while waiting: the child is ended, not left
                    self.stop()
                    raise
            else:
                self.stop()
        finally:
            os.close(self.out_r)
            self.err.close()

    def finish(self) -> None:
        """No more jobs: the child, between jobs, leaves at once (EOF), while this process
        goes on; the block's end reaps it."""
        if not self.jobs_w_closed:
            # marked first: a signal between the two would otherwise have stop() close the
            # descriptor again (EBADF in place of the interrupt, exit 4 instead of 130/143)
            self.jobs_w_closed = True
            os.close(self.jobs_w)

    def stop(self) -> None:
        """Kill the child now and wait for it: nothing it does outlives this call."""
        self.finish()
        if self._reap(False) is None:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)  # its session: the child and its own
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap(True)

    def extract(self, items: list[tuple[str, str, str]]) -> None:
        """Unpack each (archive, folder, its sha256 or md5) into the cache, its bytes checked.
        An archive py-rattler refuses to unpack (a member outside its folder, through a symlink
        of its own) is a bad package: UnsafePackage, exit 4."""
        try:
            self.run({"op": "extract", "items": items}, f"unpacking into {self.cache}")
        except JobFailed as e:
            raise UnsafePackage(f"{e.message} (the package is refused)") from None

    def link(
        self,
        staging: Path,
        final: Path,
        archives: dict[str, str],
        on_linked: Sequence[Callable[[int], None]] = (),
    ) -> None:
        """Link the plan's records into ``staging`` for the final path ``final``, from the
        cache's unpacked packages (``archives``: each record's URL -> its checked archive);
        each of ``on_linked`` hears the index of every record linked. The last job: the child
        then leaves while the install goes on. When this raises, the child is stopped first:
        nothing writes into ``staging`` any more."""
        job = {
            "op": "link",
            "staging": str(staging),
            "final": str(final),
            "pkgs": f"{self.cache}/pkgs",
            "archives": archives,
        }

        def tick(index: int) -> None:
            for hear in on_linked:
                hear(index)

        try:
            self.run(job, f"linking into {final}", tick)
        except BaseException:
            self.stop()
            raise
        self.finish()

    def run(
        self, job: dict[str, Any], what: str, on_tick: Callable[[int], None] = lambda i: None
    ) -> None:
        """One job; EnvcheckError (DiskFull for ENOSPC) when it fails or the child dies.

        ``what`` names the work in messages ("linking into /opt/env"); ``on_tick`` is called
        per package done, with its index in the plan's records when linking (else -1).
        """
        sent = self._send(job)  # queued behind the plan, if its answer is still unread
        if self._plan_sent:  # the started child's answer to its plan first
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
            raise JobFailed(f"{what} failed: {first}", detail=outcome["error"])
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
                elif line:
                    return json.loads(line)
            select.select([self.out_r], [], [])  # a signal's exception leaves from here
            chunk = os.read(self.out_r, 1 << 16)
            if not chunk:
                return {}
            self._buf += chunk
