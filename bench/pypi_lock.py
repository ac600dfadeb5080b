"""Benchmark the real PyPI lock of tests/data/pypi-rapids-26.10-cuda12.yaml's pip part.

    python bench/pypi_lock.py [--repeat 2]

envcheck's resolution (envcheck.resolve.pip.resolve: uv pip compile with line annotations,
then each package's PEP 691 page for its file's url and sha256, in parallel) against bare
`uv pip compile` of the same requirements with the same Python, platform and index, each
with a fresh, empty uv cache (as a first build on a new machine). Alternating, --repeat
rounds; the ratio of the medians is printed. Target: at most 1.2x. The held-back check
(one more uv resolution per held-back entry, in parallel) is timed on its own: it is work
bare uv does not do. Needs pypi.org.
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
sys.path.insert(0, str(ROOT))

from envcheck.resolve.heldback import held_back  # noqa: E402
from envcheck.resolve.pip import PYPI, Target, _uv, conda_python_pins, resolve  # noqa: E402
from envcheck.resolve.recipe import load_recipe  # noqa: E402
from envcheck.resolve.solve import SolvedPackage  # noqa: E402

RECIPE = ROOT / "tests" / "data" / "pypi-rapids-26.10-cuda12.yaml"
PYTHON = SolvedPackage("python", "3.12.7", "h0", 0, "c", "linux-64", "u", None, None, (), (), 0, 0)


def bare(reqs: list[str], target: Target) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join(reqs) + "\n")
        cmd = [_uv(), "pip", "compile", str(req), "--python-version", target.python,
               "--python-platform", target.uv_platform, "--index-url", PYPI, "--quiet",
               "--no-python-downloads", "--cache-dir", str(Path(tmp) / "cache")]  # fmt: skip
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        return time.perf_counter() - t


def ours(reqs: list[str], system: dict[str, str]) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["UV_CACHE_DIR"] = str(Path(tmp) / "cache")
        t = time.perf_counter()
        res = resolve(reqs, [PYTHON], "linux-64", system)
        t1 = time.perf_counter()
        n = len(held_back(reqs, res, PYPI))
        return t1 - t, time.perf_counter() - t1, n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    recipe = load_recipe(RECIPE)
    reqs, system = list(recipe.pip), dict(recipe.system)
    target = Target.of("3.12", "linux-64", system)
    assert not conda_python_pins([PYTHON])
    b, o, h = [], [], []
    for _ in range(args.repeat):
        b.append(bare(reqs, target))
        ro, rh, n = ours(reqs, system)
        o.append(ro)
        h.append(rh)
        print(f"bare uv {b[-1]:.1f} s, envcheck resolution {ro:.1f} s, held-back check "
              f"{rh:.1f} s ({n} held back)")  # fmt: skip
    mb, mo, mh = statistics.median(b), statistics.median(o), statistics.median(h)
    print(f"{len(reqs)} pip entries, cold uv cache each run, medians of {args.repeat}:")
    print(f"  bare uv pip compile       {mb:6.1f} s")
    print(f"  envcheck resolution       {mo:6.1f} s   ratio {mo / mb:.2f}x (target <= 1.2x)")
    print(f"  + held-back check         {mh:6.1f} s   (resolution + check {(mo + mh) / mb:.2f}x)")


if __name__ == "__main__":
    main()
