"""Benchmark the PyPI lock of recipes/pypi-rapids-26.10-cuda12.yaml against bare uv.

    python bench/pypi_lock.py [--repeat 3]

Whole processes, alternating: `envcheck build RECIPE` (a local channel holding only Python
3.12, as tests/build/test_pypi_lock.py builds it: the conda solve, the lint, uv's resolution,
the index pages for url and sha256, the held-back check and the written lock all included)
against bare `uv pip compile` of the recipe's pip entries with the same Python, platform and
index. Two cache states: cold (a fresh, empty uv cache for every run of either) and warm (one
cache per side, filled by a first run). Each round also times the same build in a process
that has imported envcheck already (its start-up and imports left out). Prints each run, the
medians and their ratios, with the machine, the date and the load average. Target: at most
1.2x in both. Needs pypi.org.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envcheck.resolve.pip import PYPI, Target  # noqa: E402
from envcheck.resolve.recipe import load_recipe  # noqa: E402
from envcheck.uv_runner import run_uv, uv_binary  # noqa: E402
from tests.support.channel import pkg, write_channel  # noqa: E402

RECIPE = ROOT / "recipes" / "pypi-rapids-26.10-cuda12.yaml"


def _timed(cmd: list[str], cache: Path) -> float:
    env = {**os.environ, "UV_CACHE_DIR": str(cache)}
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t
    if proc.returncode not in (0, 1):  # 1: envcheck's warn (the held-back torch)
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took


def _commands(root: Path) -> tuple[list[str], list[str]]:
    recipe = load_recipe(RECIPE)
    target = Target.of("3.12", "linux-64", dict(recipe.system))
    req = root / "requirements.in"
    req.write_text("\n".join(recipe.pip) + "\n")
    bare = [uv_binary(), "pip", "compile", str(req), "--python-version", target.python,
            "--python-platform", target.uv_platform, "--index-url", PYPI, "--quiet",
            "--no-python-downloads"]  # fmt: skip
    channel = write_channel(root / "ch", [pkg("python", "3.12.7", ["__glibc >=2.17"],
                                              build="h0_cpython")])  # fmt: skip
    ours = [sys.executable, "-m", "envcheck", "build", str(RECIPE), "--channel-data",
            channel if "://" in channel else Path(channel).as_uri(),
            "--out", str(root / "locks")]  # fmt: skip
    return bare, ours


# the same build in a process that has imported envcheck already: its own time, less the
# interpreter's start and the imports (what a long-lived caller of envcheck.api pays)
_IN_PROCESS = """
import sys, time
from envcheck.cli import main
import envcheck.resolve.build.pipeline, envcheck.resolve.heldback, envcheck.resolve.build.command
t = time.perf_counter()
rc = main(sys.argv[1:])
print(f"{time.perf_counter() - t:.4f}")
sys.exit(rc)
"""


def _in_process(ours: list[str], cache: Path) -> float:
    env = {**os.environ, "UV_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-c", _IN_PROCESS, *ours[3:]]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode not in (0, 1) or not re.fullmatch(r"\d+\.\d+", last):
        raise SystemExit(f"in-process build failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return float(last)


def _rounds(bare: list[str], ours: list[str], root: Path, repeat: int, cold: bool
            ) -> tuple[list[float], list[float], list[float]]:  # fmt: skip
    b, o, p = [], [], []
    for i in range(repeat):
        b_cache = root / (f"bare-{i}" if cold else "bare-warm")
        o_cache = root / (f"ours-{i}" if cold else "ours-warm")
        b.append(_timed(bare, b_cache))
        o.append(_timed(ours, o_cache))
        p.append(_in_process(ours, root / (f"proc-{i}" if cold else "ours-warm")))
        print(f"  {'cold' if cold else 'warm'} round {i + 1}: bare uv {b[-1]:.2f} s, "
              f"envcheck build {o[-1]:.2f} s ({o[-1] / b[-1]:.2f}x), after its imports "
              f"{p[-1]:.2f} s ({p[-1] / b[-1]:.2f}x)", flush=True)
    return b, o, p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    repeat = ap.parse_args().repeat
    print(f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{run_uv('--version').stdout.strip()}"
          f", {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare, ours = _commands(root)
        cold = _rounds(bare, ours, root, repeat, cold=True)
        _timed(bare, root / "bare-warm")  # fill each side's warm cache
        _timed(ours, root / "ours-warm")
        warm = _rounds(bare, ours, root, repeat, cold=False)
    for name, (b, o, p) in (("cold", cold), ("warm", warm)):
        mb, mo, mp = statistics.median(b), statistics.median(o), statistics.median(p)
        print(f"{name} uv cache, medians of {repeat}: bare uv pip compile {mb:.2f} s, envcheck "
              f"build {mo:.2f} s: ratio {mo / mb:.2f}x (target <= 1.2x); after its imports "
              f"{mp:.2f} s: {mp / mb:.2f}x")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
