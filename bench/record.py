"""Benchmark the RAPIDS release record's lint and `recipe new`, and `why` on a real big lock.

    python bench/record.py [--repeat 20] [--json FILE]

1. lint of the seed recipe (`rapids=22.08 python=3.9 cudatoolkit=11.0 dask-sql dash graphistry
   pycaret xarray-spatial`) and of the generated rapids-22.08-el7 recipe, and `recipe new`
   (compose: record -> recipe text, lint included), warm: in one process after one call,
   median of --repeat calls. Target: under 100 ms. Baseline in the same run: one real solve of
   the same generated recipe against a local channel shaped by the record (the work the lint
   spares when it fails fast), through envcheck's solver child: warm (the child has the
   channel loaded) and cold (a fresh child each time, as the first solve of a build).
2. The same as a user runs it: `python -m envcheck recipe new ...`, and `envcheck build` of a
   recipe the lint refuses (exit 5 before any solve), a fresh process each time (interpreter
   start + imports + work), against `python -c pass`.
3. `why` on tests/data/holoviz_holoviews_fb85eeb_pixi.lock (a real pixi.lock, 1,655 records):
   every platform of its largest environments, lock read included. Target: under 200 ms.
   Baseline in the same run: reading the lock alone with py-rattler (LockFile.from_path).
"""

from __future__ import annotations

import argparse
import json
import platform
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
from envcheck.resolve.solve import shutdown, solve_specs, virtual_packages  # noqa: E402
from envcheck.resolve.solve_recipe import exclusion_constraints  # noqa: E402
from envcheck.resolve.why.pipeline import why_lock  # noqa: E402

SEED = [
    "rapids=22.08", "python=3.9", "cudatoolkit=11.0",
    "dask-sql", "dash", "graphistry", "pycaret", "xarray-spatial",
]  # fmt: skip
EL7 = {"cuda": "11.5", "glibc": "2.17"}
PIXI = ROOT / "tests" / "data" / "holoviz_holoviews_fb85eeb_pixi.lock"
OPTS = Options(
    rapids="22.08", cuda="11.5", os="el7", python="3.9",
    with_=("xgboost", "ucx", "torch", "dask-sql"), exclude=("cuml", "cugraph"),
)  # fmt: skip


def _median_ms(fn, repeat: int) -> float:
    fn()  # warm: imports, the record's JSON read once
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _fresh_ms(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    record = load_record()
    out: dict[str, object] = {"python": platform.python_version(), "repeat": args.repeat}

    text = compose(OPTS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.yaml"
        path.write_text(text)
        recipe = load_recipe(path)
        from tests.support.channel import write_channel
        from tests.support.rapids_channel import base_packages, release_packages

        records = {}
        for r in [*base_packages(), *release_packages("22.08")]:
            records[(r["name"], r["version"], r["build"])] = r
        url = write_channel(Path(tmp) / "ch", records.values())
        vps = virtual_packages(recipe.system, "linux-64")

        def solve():
            solve_specs(recipe.dependencies, [url], "linux-64", vps,
                        constraints=exclusion_constraints(recipe))  # fmt: skip

        out["solve_ms"] = _median_ms(solve, max(3, args.repeat // 4))

        def cold_solve():
            shutdown()  # a fresh solver child: process start, channel read, solve
            solve()

        out["solve_cold_ms"] = _median_ms(cold_solve, max(3, args.repeat // 4))
        shutdown()
    out["lint_seed_ms"] = _median_ms(lambda: lint(SEED, EL7, record), args.repeat)
    out["lint_generated_ms"] = _median_ms(
        lambda: lint(recipe.dependencies, recipe.system, record), args.repeat
    )
    out["recipe_new_ms"] = _median_ms(lambda: compose(OPTS), args.repeat)
    for k in ("lint_seed_ms", "lint_generated_ms", "recipe_new_ms"):
        out[k.replace("_ms", "_vs_solve")] = out[k] / out["solve_ms"]  # type: ignore[operator]
        out[k.replace("_ms", "_vs_cold_solve")] = out[k] / out["solve_cold_ms"]  # type: ignore[operator]

    py = sys.executable
    cli = [py, "-m", "envcheck", "recipe", "new", "--rapids", "22.08", "--cuda", "11.5",
           "--os", "el7", "--python", "3.9", "--with", "xgboost,ucx,torch,dask-sql"]  # fmt: skip
    n = max(3, args.repeat // 4)
    out["cli_recipe_new_ms"] = _fresh_ms(cli, n)
    out["cli_python_pass_ms"] = _fresh_ms([py, "-c", "pass"], n)
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"  # rapids=22.08 with dask=2023.1: lint fails, exit 5
        bad.write_text(
            "name: bad\nchannels: [rapidsai, conda-forge]\nplatforms: [linux-64]\n"
            'system: {cuda: "11.5", glibc: "2.17"}\n'
            "dependencies: [python=3.9, rapids=22.08, dask=2023.1]\n"
        )
        argv = [py, "-m", "envcheck", "build", str(bad), "--out", str(Path(tmp) / "locks")]
        times = []
        for _ in range(n):
            t = time.perf_counter()
            rc = subprocess.run(argv, cwd=ROOT, capture_output=True).returncode
            times.append((time.perf_counter() - t) * 1000)
            assert rc == 5, rc
        out["cli_build_lint_fail_ms"] = statistics.median(times)

    from rattler import LockFile

    out["read_pixi_lock_ms"] = _median_ms(lambda: LockFile.from_path(PIXI), args.repeat)
    for env in ("default", "docs", "test-gpu"):

        def why(env=env):
            return why_lock("libcudf" if env == "test-gpu" else "numpy", PIXI, None, env, None)

        chains, _ = why()
        out[f"why_{env}_ms"] = _median_ms(why, args.repeat)
        out[f"why_{env}_chains"] = len(chains)
        out[f"why_{env}_vs_read"] = out[f"why_{env}_ms"] / out["read_pixi_lock_ms"]  # type: ignore[operator]
    for k, v in out.items():
        print(f"{k:28} {v:.3f}" if isinstance(v, float) else f"{k:28} {v}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
