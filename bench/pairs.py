"""Whole processes timed in alternating pairs: what the start-up benchmarks share."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# A bare Dask client as a whole process: import, connect, one versions round, close.
BARE_CLIENT = (
    "import sys, warnings; warnings.simplefilter('ignore')\n"
    "from distributed import Client\n"
    "c = Client(sys.argv[1]); c.get_versions(check=True); c.close()\n"
)


def wall(cmd: list[str], cwd: str | None = "/", timeout: float = 300) -> float:
    """Seconds one process took; exit 0 or 1 (1: envcheck's warnings, e.g. no GPU here, are a
    verdict) or the benchmark stops with the command's stderr."""
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    took = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:6])}... exited {done.returncode}: "
                         f"{done.stderr.strip()[-2000:]}")  # fmt: skip
    return took


def alternate(first: list[str], second: list[str], n: int, cwd: str | None = "/"
              ) -> tuple[list[float], list[float], list[float]]:
    """Both commands once to warm the page cache (and whatever they compile), then n pairs in
    turn: (first's times, second's times, the paired ratios first / second)."""
    wall(first, cwd), wall(second, cwd)
    a_times: list[float] = []
    b_times: list[float] = []
    for _ in range(n):
        a_times.append(wall(first, cwd))
        b_times.append(wall(second, cwd))
    return a_times, b_times, [a / b for a, b in zip(a_times, b_times, strict=True)]


@contextlib.contextmanager
def dask_cluster(python: str, workers: int) -> Iterator[str]:
    """A scheduler and `workers` worker processes run by `python`, for the block: its address."""
    from tests.support.subprocess_cluster import start_cluster

    with tempfile.TemporaryDirectory() as tmp:
        cluster = start_cluster(Path(tmp) / "c", python=python)
        try:
            names = [f"w{i}" for i in range(workers)]
            for n in names:
                cluster.add_worker(n, python=python)
            cluster.wait_for_workers(names)
            yield cluster.address
        finally:
            cluster.stop()


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def quartiles(ratios: list[float]) -> str:
    """The middle half of paired ratios ("q1-q3"; the range under four pairs): the spread
    printed beside their median."""
    if len(ratios) < 4:
        return f"{min(ratios):.2f}-{max(ratios):.2f}"
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return f"{q1:.2f}-{q3:.2f}"
