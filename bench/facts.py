"""Benchmark: collect_node_facts() cold (new process, NVML start included) and warm.

Target: warm collection under 50 ms, so it can run on every worker of a 100-worker cluster in
one round. The baseline, measured in the same run, is the usual way to list installed Python
packages: importlib.metadata.distributions() with each distribution's name and version read
(what pip freeze does); and, for scale, distributed's get_versions(), which reports only
about ten packages from modules already imported (so it reads no files at all).

    python bench/facts.py [--repeat 50] [--cold 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from envcheck.verify.facts import collect_node_facts  # noqa: E402

COLD = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
from envcheck.verify.facts import collect_node_facts
t1 = time.perf_counter()
f = collect_node_facts()
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, len(f.gpus), len(f.packages))
"""


def _times(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # the first call is the cold one; measured separately
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _metadata_scan() -> dict[str, str]:
    import importlib.metadata

    return {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}


def _summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "median_ms": statistics.median(xs) * 1e3,
        "p90_ms": xs[int(0.9 * (len(xs) - 1))] * 1e3,
        "min_ms": xs[0] * 1e3,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--cold", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    cold = []
    for _ in range(args.cold):
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", COLD.format(repo=str(REPO))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        wall = time.perf_counter() - t
        cold.append((wall, float(out[0]), float(out[1]), int(out[2]), int(out[3])))

    facts = collect_node_facts()
    results = {
        "machine": f"{platform.node()} {platform.machine()} python {platform.python_version()}",
        "gpus": len(facts.gpus),
        "nvml": facts.nvml_error or f"driver {facts.driver_version}",
        "packages": len(facts.packages),
        "cold_process_wall_ms": statistics.median(c[0] for c in cold) * 1e3,
        "cold_import_ms": statistics.median(c[1] for c in cold) * 1e3,
        "cold_first_collect_ms": statistics.median(c[2] for c in cold) * 1e3,
        "warm": _summary(_times(collect_node_facts, args.repeat)),
        "baseline_metadata_scan": _summary(_times(_metadata_scan, args.repeat)),
    }
    try:
        from distributed.versions import get_versions

        results["baseline_distributed_get_versions_warm"] = _summary(
            _times(get_versions, args.repeat)
        )
    except ImportError:
        pass
    warm = results["warm"]["median_ms"]
    base = results["baseline_metadata_scan"]["median_ms"]
    results["warm_vs_metadata_scan"] = warm / base

    print(f"machine: {results['machine']}; GPUs: {results['gpus']} ({results['nvml']})")
    print(f"packages seen: {results['packages']}")
    print(
        f"cold: process {results['cold_process_wall_ms']:.1f} ms wall = import "
        f"{results['cold_import_ms']:.1f} ms + first collect {results['cold_first_collect_ms']:.1f}"
        f" ms (NVML start included) + interpreter start/exit"
    )
    for key in ("warm", "baseline_metadata_scan", "baseline_distributed_get_versions_warm"):
        if key in results:
            r = results[key]
            print(f"{key}: median {r['median_ms']:.3f} ms, p90 {r['p90_ms']:.3f} ms")
    verdict = "meets" if warm < 50 else "MISSES"
    print(
        f"warm / metadata scan = {results['warm_vs_metadata_scan']:.2f}x; "
        f"{verdict} the 50 ms warm target"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if warm < 50 else 1


if __name__ == "__main__":
    raise SystemExit(main())
