"""Benchmark reading a lock: `envcheck verify node --lock` on locks of 5,000 to 20,000 packages.

    python bench/lock_read.py [--sizes 5000,10000,20000] [--repeat 5] [--before DIR]

Big conda-lock files are made from a shipped lock's real records, renamed
(tests/support/big_locks.py, writer's layout; no numpy, dask, ... among the names, so the lock
implies no import probes and the difference is the lock alone). In the same run:

- in process: ``read_lock`` (what verify calls) against the old reader's load, PyYAML's
  pure-Python ``yaml.safe_load`` (once per size: it takes seconds);
- whole processes: ``envcheck verify node --quiet --lock L`` against the same command without
  ``--lock`` (medians of --repeat, interleaved); with ``--before DIR`` (a ``git archive`` of an
  older tree) also that tree's ``--lock`` command, once per size.

Prints the times, the ratios, and microseconds per package for each size (linear: the
per-package cost stays flat as the lock grows 4x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/ itself must not be on the path: bench/build.py would shadow the `build` package
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import yaml  # noqa: E402

from bench.timing import median_seconds  # noqa: E402
from envcheck.lockfile.read import read_lock  # noqa: E402
from tests.support.big_locks import big_lock_text  # noqa: E402

CLI = "import sys; from envcheck.cli import main; sys.exit(main())"


def verify_node(tree: Path, lock: Path | None) -> float:
    """Wall seconds of one `envcheck verify node` process run from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, "-c", CLI, "verify", "node", "--quiet"]
    args += ["--lock", str(lock)] if lock else []
    t0 = time.perf_counter()
    run = subprocess.run(args, env=env, cwd=tempfile.gettempdir(), capture_output=True)
    took = time.perf_counter() - t0
    if run.returncode not in (0, 1, 2):  # pass, warnings, failures: all read the lock
        raise SystemExit(f"verify node exited {run.returncode}: {run.stderr.decode()[-500:]}")
    return took


def whole_processes(locks: dict[int, Path], repeat: int) -> tuple[float, dict[int, float]]:
    """(median without --lock, size -> median with --lock), interleaved."""
    bare: list[float] = []
    with_lock: dict[int, list[float]] = {n: [] for n in locks}
    for _ in range(repeat):
        bare.append(verify_node(ROOT, None))
        for n, lock in locks.items():
            with_lock[n].append(verify_node(ROOT, lock))
    return statistics.median(bare), {n: statistics.median(t) for n, t in with_lock.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="5000,10000,20000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--before", type=Path, help="an older tree (git archive) to run once")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.before and not (a.before / "envcheck" / "cli.py").is_file():
        raise SystemExit(f"--before {a.before}: no envcheck/cli.py there")
    with tempfile.TemporaryDirectory(prefix="envcheck-lock-bench-") as tmp:
        locks = {}
        for n in sizes:
            locks[n] = Path(tmp) / f"big{n}.conda-lock.yml"
            locks[n].write_text(big_lock_text(n, rename_all=True))
        read = {n: median_seconds(lambda p=p: read_lock(p), a.repeat) for n, p in locks.items()}
        old = {n: median_seconds(lambda p=p: yaml.safe_load(p.read_text()), 1)
               for n, p in locks.items()}
        bare, cmd = whole_processes(locks, a.repeat)
        before = {n: verify_node(a.before, p) for n, p in locks.items()} if a.before else {}
    report(sizes, a.repeat, bare, read, old, cmd, before)


def report(
    sizes: list[int],
    repeat: int,
    bare: float,
    read: dict[int, float],
    old: dict[int, float],
    cmd: dict[int, float],
    before: dict[int, float],
) -> None:
    print(f"Python {sys.version.split()[0]}, medians of {repeat} (old load, --before: once)")
    print(f"  verify node without --lock (baseline): {bare:7.3f} s")
    for n in sizes:
        us = read[n] / n * 1e6
        extra = cmd[n] - bare
        print(f"  {n:>6,} packages:")
        print(f"    read_lock:          {read[n]:7.3f} s  ({us:5.1f} us/package)")
        print(
            f"    old pure-YAML load:     {old[n]:7.3f} s  ({old[n] / read[n]:5.1f}x read_lock)"
        )
        print(
            f"    verify node --lock:     {cmd[n]:7.3f} s  ({cmd[n] / bare:4.2f}x the baseline, ",
            end="",
        )
        print(f"+{extra:.3f} s, {extra / n * 1e6:5.1f} us/package)")
        if n in before:
            was = before[n]
            print(f"    --before tree --lock:   {was:7.3f} s  ({was / bare:4.1f}x the baseline)")
    lo, hi = min(sizes), max(sizes)
    growth = (cmd[hi] - bare) / (cmd[lo] - bare)
    print(
        f"  linearity {hi:,} / {lo:,} packages (ideal {hi / lo:.1f}): read_lock "
        f"{read[hi] / read[lo]:.2f}, verify node's lock cost {growth:.2f}"
    )


if __name__ == "__main__":
    main()
