"""Where a whole `envcheck verify cluster` process spends its time on a GPU host, phase by
phase, beside the bare process of issue 30 (LocalCUDACluster + get_versions + a task + a
dask.array sum), alternating, in one run.

Each envcheck run is a child process that wraps verify cluster's own steps (the embedded
cluster's start and close, the facts round, the checks, the smoke tests) with clocks and then
runs the CLI as `python -m envcheck verify cluster` does. Several trees can be timed side by
side: `--tree NAME=DIR` puts DIR first on PYTHONPATH (an unpacked `git archive REV envcheck`);
without one, this checkout.

    python3 bench/gpu_cluster_timeline.py --repeats 3 [--tree base=/tmp/base] [--tree new=.]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

PHASES = ("imports", "cluster start", "facts round", "checks", "smoke", "cluster close",
          "exit")


def child(started: float, out: str) -> int:
    """Run verify cluster with its steps clocked; write {mark: wall time} to ``out``."""
    marks: dict[str, float] = {"start": started, "imported": 0.0}

    def clocked(name: str, fn):  # noqa: ANN001, ANN202
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            marks[f"{name} begin"] = time.time()
            try:
                return fn(*args, **kwargs)
            finally:
                marks[f"{name} end"] = time.time()
        return wrapper

    from envcheck import cli
    from envcheck.verify.cluster import pipeline
    from envcheck.verify.smoke import suite

    real_timed_run = suite.timed_run

    def timed_run(test, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        marks[f"test {test.id} begin"] = time.time()
        try:
            return real_timed_run(test, *args, **kwargs)
        finally:
            marks[f"test {test.id} end"] = time.time()

    suite.timed_run = timed_run

    real_embedded = pipeline.embedded_cluster

    @contextlib.contextmanager
    def embedded(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        marks["cluster begin"] = time.time()
        with real_embedded(*args, **kwargs) as client:
            marks["cluster up"] = time.time()
            try:
                yield client
            finally:
                marks["close begin"] = time.time()
        marks["close end"] = time.time()

    pipeline.embedded_cluster = embedded
    for name in ("_facts_round", "judge", "_smoke"):
        setattr(pipeline, name, clocked(name, getattr(pipeline, name)))
    marks["imported"] = time.time()
    rc = cli.main(["verify", "cluster", "--json", out + ".report"])
    marks["main end"] = time.time()
    Path(out).write_text(json.dumps(marks))
    return rc


def phases(marks: dict[str, float], ended: float) -> dict[str, float]:
    m = marks
    tests = [k[5:-6] for k in m if k.startswith("test ") and k.endswith(" begin")]
    for t in tests:
        print(f"      {t}: +{m[f'test {t} begin'] - m['_smoke begin']:.2f} -> "
              f"+{m[f'test {t} end'] - m['_smoke begin']:.2f}", flush=True)
    return {
        "imports": m["cluster begin"] - m["start"],
        "cluster start": m["cluster up"] - m["cluster begin"],
        "facts round": m["_facts_round end"] - m["_facts_round begin"],
        "checks": m["judge end"] - m["judge begin"],
        "smoke": m["_smoke end"] - m["_smoke begin"],
        "cluster close": m["close end"] - m["close begin"],
        "exit": ended - m["main end"],
    }


def env(prefix: str) -> dict[str, str]:
    """gpu_faults.py's environment for its runs (this checkout on PYTHONPATH, NVLink multicast
    off), with ``prefix`` first on PYTHONPATH. Imported here, not at the top: the timed child
    runs this file too."""
    import gpu_faults

    return gpu_faults.env(PYTHONPATH_PREFIX=prefix) if prefix else gpu_faults.env()


def timed_child(prefix: str, out: Path) -> tuple[float, dict[str, float], int]:
    t0 = time.time()
    p = subprocess.run([sys.executable, __file__, "--child", str(t0), str(out)],
                       env=env(prefix), capture_output=True, text=True, timeout=300)
    ended = time.time()
    marks = json.loads(out.read_text()) if out.exists() else {}
    got = phases(marks, ended) if {"main end", "cluster up"} <= set(marks) else {}
    if not got:
        print(p.returncode, p.stdout[-2000:], p.stderr[-2000:], flush=True)
    report = Path(f"{out}.report")
    for r in json.loads(report.read_text())["results"] if report.exists() else []:
        if r["check"] == "smoke.torch-ddp" or (r.get("seconds") or 0) > 0.5:
            got[r["check"]] = max(got.get(r["check"], 0.0), r.get("seconds") or 0.0)
            if r["check"] == "smoke.torch-ddp":
                print("   ", r["message"][r["message"].find("(torch"):], flush=True)
    return ended - t0, got, p.returncode


def main() -> None:
    import gpu_faults  # the bare process it times, beside this bench's

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tree", action="append", default=[], help="NAME=DIR, timed beside")
    ap.add_argument("--out", type=Path, default=Path("/tmp/timeline"))
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": ""}
    args.out.mkdir(parents=True, exist_ok=True)
    timed_child(next(iter(trees.values())), args.out / "untimed.json")  # fills caches
    walls: dict[str, list[float]] = {name: [] for name in (*trees, "bare")}
    parts: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for i in range(args.repeats):
        for name, prefix in trees.items():
            wall, got, rc = timed_child(prefix, args.out / f"{name}-{i}.json")
            walls[name].append(wall)
            parts[name].append(got)
            print(f"{name} run {i}: {wall:.2f} s, exit {rc}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in got.items()), flush=True)
        t0 = time.time()
        subprocess.run([sys.executable, "-c", gpu_faults.BARE_CLUSTER], env=env(""),
                       capture_output=True, timeout=300)
        walls["bare"].append(time.time() - t0)
        print(f"bare run {i}: {walls['bare'][-1]:.2f} s", flush=True)
    bare = statistics.median(walls["bare"])
    print(f"\nbare: median {bare:.2f} s ({', '.join(f'{w:.1f}' for w in walls['bare'])})")
    for name in trees:
        med = statistics.median(walls[name])
        runs = [p for p in parts[name] if "imports" in p]
        split = ", ".join(f"{k} {statistics.median(p[k] for p in runs):.2f}"
                          for k in PHASES) if runs else "no timeline"
        print(f"{name}: median {med:.2f} s = {med / bare:.2f}x bare "
              f"({', '.join(f'{w:.1f}' for w in walls[name])}); medians: {split}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        raise SystemExit(child(float(sys.argv[2]), sys.argv[3]))
    main()
