"""Ctrl-C and SIGTERM as exceptions until a run commits; after its commit point, it finishes.

envcheck's promise on an interrupt: exit 130 (SIGINT) or 143 (SIGTERM) means nothing was
replaced. Both signals raise (``KeyboardInterrupt``, or its subclass ``Terminated``) so every
``finally`` and ``except KeyboardInterrupt`` runs and children are ended. ``commit()`` marks the
point after which a run must finish instead (a build that starts swapping its lock files): a
signal arriving then is remembered and ignored, and the run ends with its normal exit code.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from envcheck.errors import ExitCode

TYPE_CHECKING = False  # typing is not imported at start-up (`envcheck --help`)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so the same cleanup runs; exit code 143."""


_committed = False
_pending: list[int] = []
_interrupted = False  # a signal raised since install(): library noise after it is dropped


def _handler(signum: int, frame: Any) -> None:
    global _interrupted
    if _committed:
        _pending.append(signum)
        return
    _interrupted = True
    if _in_hook or _inside_hook(frame):  # raised here it would be dropped with the hook
        _RESENDER.again(signum)  # ... so it is sent again once the main thread has left it
        return
    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def _inside_hook(frame: Any) -> bool:
    """The main thread is somewhere in the unraisable hook (its wrapper included): also in the
    few bytecodes before ``_in_hook`` is set and after it is cleared, where a signal landed
    under load and was dropped with the hook (seen in CI: the interrupt never came)."""
    while frame is not None:
        if frame.f_code is _unraisable.__code__ or frame.f_code is _HOOK_CODE[0]:
            return True
        frame = frame.f_back
    return False


def _unraisable(hook: Any, previous: Callable[[Any], None]) -> None:
    """sys.unraisablehook while installed.

    The handler's exception is raised wherever the main thread is, and when that is a gc
    callback (distributed's GCDiagnosis), a __del__ or a weakref callback, Python reports it
    as "Exception ignored in ..." and drops it: the run went on as if no Ctrl-C came (seen:
    verify cluster finishing its smoke tests, exit 3, a traceback on stderr). The signal is
    sent again instead, by _Resender, once the main thread has left the callback. What such
    callbacks report after an interrupt (state it left half-updated) is noise: dropped.
    """
    global _in_hook
    _in_hook = True
    try:
        exc = getattr(hook, "exc_value", None)
        if isinstance(exc, KeyboardInterrupt) and not (_committed or _delivered):
            _RESENDER.again(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
        elif not _interrupted:
            previous(hook)
    finally:
        _in_hook = False


class _Resender:
    """A daemon thread that sends a dropped signal again, a moment later (from here: a signal
    raised inside the hook would be dropped with it)."""

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._signum = signal.SIGINT
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="envcheck-resend-signal", daemon=True
            )
            self._thread.start()

    def native_id(self) -> int | None:
        """The thread's id as the kernel knows it (a task of /proc/self/task), None before
        ``start``."""
        return None if self._thread is None else self._thread.native_id

    def again(self, signum: int) -> None:
        self._signum = signum
        self._wake.set()  # an uncontended lock: no wait, no signal handled in here

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            time.sleep(0.02)  # let the main thread leave the callback and the hook
            if not (_delivered or _committed):  # a late one would meet the default handler
                # to the main thread itself: a process-wide kill may be taken by this thread,
                # and the main thread, asleep in a blocking call, would not see it until the
                # call returned (seen under load: the interrupt came after the run went on)
                signal.pthread_kill(threading.main_thread().ident or 0, self._signum)


_RESENDER = _Resender()
_HOOK_CODE: list[Any] = [None]  # the installed hook's wrapper, for _inside_hook
_in_hook = False
_installed = False  # between install() and its restore: a commit holds the signals
_delivered = False


def fork_safe_threads() -> set[int]:
    """Kernel ids of this module's threads, which a fork may leave behind: the resender
    waits on an Event, sleeps or sends a signal, and holds no lock a forked child could
    need (the child never comes back into this module)."""
    tid = _RESENDER.native_id()
    return set() if tid is None else {tid}


def delivered() -> None:
    """The interrupt reached the code that reports it: send no dropped copy again (a library
    that kept the exception may re-raise it in a finalizer)."""
    global _delivered
    _delivered = True


def install(*, held: bool = False) -> Callable[[], None]:
    """Route SIGINT and SIGTERM through the handler; returns what puts the old handlers back.

    Main thread only (a no-op elsewhere). Both signals are held (blocked) while the handlers
    are put in place and let in at the end; with ``held`` they stay held until ``release``,
    which the caller calls first thing inside the ``try`` that handles ``KeyboardInterrupt``:
    one that arrives during the setup is raised there, never before that ``try`` (seen: a
    SIGINT during the resender's start left a traceback and no report). A signal the process
    was started ignoring (a background job's SIGINT) stays ignored. One it was started with
    *blocked* (a parent's signal mask is inherited: seen from a test runner's worker after a
    commit outside a run) is let in for the run too, or Ctrl-C would stay pending for ever;
    restore puts the caller's mask back.
    """
    global _committed, _interrupted, _delivered, _installed
    _committed = _interrupted = _delivered = False
    del _pending[:]
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    blocked = _mask() & set(_SIGNALS)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, set(_SIGNALS))
    old = {}
    for sig in _SIGNALS:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue
        old[sig] = signal.signal(sig, _handler)
    _installed = True
    previous_hook = sys.unraisablehook
    if old:
        _RESENDER.start()
        sys.unraisablehook = wrapper = lambda hook: _unraisable(hook, previous_hook)
        _HOOK_CODE[0] = wrapper.__code__
    if not held:
        _unblock()

    def restore() -> None:
        # unblock while this module's handler is still in place: a signal held since the
        # commit point is delivered to it (and remembered), not to the handler put back
        global _installed
        _unblock()
        delivered()  # what is still dropped now belongs to the caller's handlers, not ours
        _installed = False
        for sig, handler in old.items():
            signal.signal(sig, handler)
        sys.unraisablehook = previous_hook
        if blocked and hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, blocked)

    return restore


def commit() -> None:
    """From now on this run finishes: signals are held, not raised.

    Held, not only ignored: they are blocked in this thread, because a handled signal still
    interrupts a blocking write, and CPython then drops the rest of a large write to a pipe
    (seen: a report cut at 64 KiB, exit 0). They stay pending until ``uncommit`` or the
    ``restore`` of ``install``.
    """
    global _committed
    _committed = True
    if (
        _installed
        and threading.current_thread() is threading.main_thread()
        and hasattr(signal, "pthread_sigmask")
    ):
        # only inside a run: outside one (a library call, a test) nothing would unblock them,
        # and every process started from this one afterwards would inherit them blocked
        signal.pthread_sigmask(signal.SIG_BLOCK, set(_SIGNALS))


def release() -> None:
    """Let the signals ``install`` holds in: one that arrived meanwhile raises here. Call it
    inside the ``try`` that handles ``KeyboardInterrupt``."""
    _unblock()


def _mask() -> set[int]:
    if hasattr(signal, "pthread_sigmask"):
        return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    return set()


def _unblock() -> None:
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(_SIGNALS))


def uncommit() -> None:
    """The commit was rolled back (nothing replaced): signals raise again, held ones now."""
    global _committed
    held = pending()
    _committed = False
    _unblock()  # a held signal arrives here, and raises
    if held is not None and _pending:
        del _pending[:]
        _handler(held, None)


def committed() -> bool:
    return _committed


def pending() -> int | None:
    """The first signal that arrived after the commit point (held or handled), if any."""
    if _pending:
        return _pending[0]
    if hasattr(signal, "sigpending"):
        held = [s for s in _SIGNALS if s in signal.sigpending()]
        if held:
            return held[0]
    return None


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """One run's signal policy around a block (the API's calls, in a notebook or a script):
    the caller's handlers and signal mask are back when the block ends."""
    restore = install(held=True)
    try:
        release()
        yield
    finally:
        restore()


def exit_for(e: KeyboardInterrupt, quiet: bool) -> int:
    """The one line and the exit code of a run ended by Ctrl-C or SIGTERM.

    ``quiet``: the process is envcheck itself; after the line, stderr goes to /dev/null for
    the rest of the process. Libraries clean up at exit (distributed's atexit closes a cluster
    an interrupt left half started) and print tracebacks about the interrupt itself; the user
    was told already.
    """
    delivered()
    if isinstance(e, Terminated):
        print("envcheck: terminated (SIGTERM)", file=sys.stderr)
        code = ExitCode.TERMINATED
    else:
        print("envcheck: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    if quiet:
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    return int(code)
