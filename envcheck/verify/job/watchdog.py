"""A watchdog that ends the process when a step overruns its deadline (a collective stuck in
native code, a store that never answers): the last resort, after every bounded wait."""

from __future__ import annotations

import os
import threading
import time
from typing import Callable


class Watchdog:
    """Ends the process (os._exit) when the current step overruns its deadline."""

    def __init__(self, on_fire: Callable[[str], None]) -> None:
        self._on_fire = on_fire
        self._lock = threading.Lock()
        self._deadline = float("inf")
        self._what = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="envcheck-watchdog", daemon=True)
        self._thread.start()

    def arm(self, seconds: float, what: str) -> None:
        with self._lock:
            self._deadline, self._what = time.monotonic() + seconds, what

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
