"""A watchdog that ends the process when a step overruns its deadline (a collective stuck in
native code, a store that never answers): the last resort, after every bounded wait."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Callable

GRACE = 2.0  # seconds past a step's limit before the watchdog ends the rank
BOUND = GRACE + 1.0  # and the watchdog's last acts: a hung step ends a rank within limit + BOUND


class Watchdog:
    """Ends the process (os._exit) when the current step overruns its deadline."""

    def __init__(self, on_fire: Callable[[Any], None]) -> None:
        self._on_fire = on_fire
        self._lock = threading.Lock()
        self._deadline = float("inf")
        self._what: object = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="envcheck-watchdog", daemon=True)
        self._thread.start()

    def arm(self, seconds: float, what: object) -> None:
        """Fire `seconds` from now, passing `what` (the step) to on_fire."""
        with self._lock:
            self._deadline, self._what = time.monotonic() + seconds, what

    @property
    def what(self) -> str:
        """The step the watchdog is armed for now, as a message names it."""
        with self._lock:
            return str(self._what)

    def disarm(self) -> None:
        with self._lock:
            self._deadline = float("inf")

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                late, what = time.monotonic() > self._deadline, self._what
            if late:
                try:
                    self._on_fire(what)
                finally:
                    os._exit(3)  # ExitCode.ERROR: the last resort, nothing else ran in time


class SignalWatch:
    """SIGTERM or SIGINT while the main thread is stuck in native code (a gloo collective, a
    store call): Python runs its handler only once that call returns, up to --timeout later.
    The C-level handler writes the signal's number to a pipe (signal.set_wakeup_fd) at once;
    this thread reads it and, when the run has not ended LATE seconds later, calls
    `on_stuck(signum)` and ends the process with 128 + signum."""

    LATE = 1.0  # seconds the main thread has to take the signal itself

    def __init__(self, on_stuck: Callable[[int], None]) -> None:
        self._on_stuck = on_stuck
        self._done = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        try:
            self._old = signal.set_wakeup_fd(self._write)
        except ValueError:  # not the main thread (a caller's own thread): nothing to watch
            self._old = None
            return
        threading.Thread(target=self._run, name="envcheck-signals", daemon=True).start()

    def stop(self) -> None:
        """The run ended (or took the signal itself): the watch does nothing more."""
        self._done.set()
        if self._old is not None:
            signal.set_wakeup_fd(self._old)
            self._old = None
            os.write(self._write, b"\0")  # wakes the thread: it closes the pipe

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                got = os.read(self._read, 64)
            except OSError:
                return
            if self._done.is_set():
                os.close(self._read)
                os.close(self._write)
                return
            for signum in (signal.SIGTERM, signal.SIGINT):
                if signum in got and not self._done.wait(self.LATE):
                    self._done.set()
                    try:
                        self._on_stuck(signum)
                    finally:
                        os._exit(128 + signum)
