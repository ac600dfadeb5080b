"""Benchmark the lint of the seed command's recipe (every spec form) and `build --try`.

    python bench/spec_try.py [--repeat 20]

1. In process, warm (one call first, then the median of --repeat): load + lint of
   tests/data/seed-recipes/dask-cuda-22.08-final.yaml (the user's final 22.08 command, build
   strings included) and `recipe new --rapids 22.08`. Target: under 100 ms. Whole process:
   `python -m envcheck build` of that recipe with a contradiction added (the lint refuses it,
   exit 5, before any solve), against `python -c pass`.
2. `envcheck build RECIPE --try` over N candidates against N separate `envcheck build` runs of
   the recipe with one candidate added (each a fresh process, as a user adding add-ons one by
   one), on a generated RAPIDS-shaped channel (tests/support/worlds.py). Target: at most 0.6x.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envcheck.resolve.recipe import load_recipe  # noqa: E402
from envcheck.resolve.record.lint import lint  # noqa: E402
from envcheck.resolve.record.new.pipeline import Options, compose  # noqa: E402
from envcheck.resolve.record.table import load_record  # noqa: E402
from tests.support.channel import write_recipe  # noqa: E402
from tests.support.worlds import RELEASES, write_world  # noqa: E402

SEED = ROOT / "tests" / "data" / "seed-recipes" / "dask-cuda-22.08-final.yaml"
CANDIDATES = ["cuml=22.08", "cugraph=22.12", "cuspatial=22.08", "cuxfilter=22.08", "cucim=22.08"]


def warm_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def process_s(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def lint_part(repeat: int, tmp: Path) -> None:
    record = load_record()

    def seed() -> None:
        r = load_recipe(SEED)
        lint(r.dependencies, r.system, record)

    opts = Options(rapids="22.08", cuda="11.5", os="el7", python="3.9")
    print(f"lint of the seed command recipe (load + lint), warm: {warm_ms(seed, repeat):.2f} ms")
    print(
        f"recipe new --rapids 22.08, warm: {warm_ms(lambda: compose(opts, record), repeat):.2f} ms"
    )
    bad = tmp / "refused.yaml"
    bad.write_text(
        SEED.read_text().replace("  - 'xgboost'\n", "  - 'xgboost'\n  - 'dask=2023.1.1'\n")
    )
    py = sys.executable
    whole = process_s([py, "-m", "envcheck", "build", str(bad), "--out", str(tmp / "l")], 5)
    bare = process_s([py, "-c", "pass"], 5)
    print(
        f"whole process, build refused by the lint (exit 5): {whole * 1000:.0f} ms "
        f"(python -c pass: {bare * 1000:.0f} ms)"
    )


def try_part(repeat: int, tmp: Path) -> None:
    world = write_world(tmp / "world", [RELEASES["22.08"], RELEASES["22.12"]])
    deps = "[python=3.9, dask-cuda=22.08, cudatoolkit=11.5]"
    system = '{cuda: "11.8", glibc: "2.28"}'
    base = write_recipe(tmp, world, deps, system=system)
    py = sys.executable
    tried = [py, "-m", "envcheck", "build", str(base), "--out", str(tmp / "t"),
             "--try", ",".join(CANDIDATES)]  # fmt: skip
    singles = []
    for i, c in enumerate(CANDIDATES):
        r = write_recipe(tmp, world, deps.replace("]", f", '{c}']"), system=system, name=f"one{i}")
        singles.append([py, "-m", "envcheck", "build", str(r), "--out", str(tmp / f"o{i}")])
    t_try, t_sep = [], []
    for _ in range(repeat):  # interleaved: machine load moves both alike
        t0 = time.perf_counter()
        subprocess.run(tried, cwd=ROOT, capture_output=True, check=False)
        t_try.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for cmd in singles:
            subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
        t_sep.append(time.perf_counter() - t0)
    a, b = statistics.median(t_try), statistics.median(t_sep)
    print(
        f"--try over {len(CANDIDATES)} candidates: {a:.2f} s; {len(CANDIDATES)} separate "
        f"builds: {b:.2f} s; ratio {a / b:.2f}x (target <= 0.6x)"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        lint_part(args.repeat, Path(d))
        try_part(max(1, args.repeat // 6), Path(d))


if __name__ == "__main__":
    main()
