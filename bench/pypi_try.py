"""`envcheck build --try` with pip candidates on the real RAPIDS 26.10 PyPI stack, against the
same candidates as separate `envcheck build` runs (each the recipe with one more pip entry).

    python bench/pypi_try.py [--repeat 2]

One warm uv cache for both (filled by a first build), alternating; the ratio of the medians is
printed. Target (issue 17): --try at most 0.6x the separate builds. Needs pypi.org.
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

from tests.support.channel import pkg, write_channel  # noqa: E402

RECIPE = ROOT / "tests" / "data" / "pypi-rapids-26.10-cuda12.yaml"
CANDIDATES = ("cugraph-cu12==26.10.*", "pandas<2", "dask-sql", "xarray-spatial")
ENVCHECK = [sys.executable, "-m", "envcheck"]


def _run(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([*ENVCHECK, *args], capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    repeat = ap.parse_args().repeat
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        channel = write_channel(root / "ch", [pkg("python", "3.12.7", ["__glibc >=2.17"],
                                                  build="h0_cpython")])
        recipes = []
        for i, c in enumerate(CANDIDATES):
            path = root / f"r{i}.yaml"
            path.write_text(RECIPE.read_text().replace("  - xgboost\n", f"  - xgboost\n  - {c}\n"))
            recipes.append(path)
        common = ["--channel-data", channel]
        _run(["build", str(RECIPE), *common, "--out", str(root / "warm")])  # fills uv's cache
        tries, builds = [], []
        for _ in range(repeat):
            tries.append(_run(["build", str(RECIPE), *common, "--try",
                               ",".join(f"pip:{c}" for c in CANDIDATES)]))
            builds.append(sum(_run(["build", str(r), *common, "--out", str(root / f"o{i}")])
                              for i, r in enumerate(recipes)))
    t, b = statistics.median(tries), statistics.median(builds)
    print(f"{len(CANDIDATES)} pip candidates, warm uv cache, medians of {repeat}:")
    print(f"  build --try                  {t:.1f} s")
    print(f"  {len(CANDIDATES)} separate builds            {b:.1f} s")
    print(f"  ratio {t / b:.2f}x (target <= 0.6x)")


if __name__ == "__main__":
    main()
