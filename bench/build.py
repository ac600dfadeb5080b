"""Benchmark `envcheck build` against a bare rattler.solve, and the conflict diagnosis.

    python bench/build.py [--records 50000] [--repeat 3] [--json FILE]

On a generated channel of at least 50,000 records (tests/support/worlds.py: RAPIDS-shaped releases
plus named-like C/C++ libraries with deep depends):
1. `envcheck build` of a seed recipe as a user runs it, a fresh process each time, against a
   bare `rattler.solve` of the same specs, virtual packages and exclusion constraints, also a
   fresh process each time (python startup + import rattler + solve). Target: at most 1.5x.
   Two seeds: rapids-22.08-el7's conda entries (a light solve, where envcheck's fixed cost
   shows), and the same plus eight libraries from the deep graph (a solve of real weight).
   Then the same build again with its lock present (the old lock is read to report what
   changed) and `envcheck build --check`, also medians of fresh processes.
2. The conflict diagnosis for one culprit pair (cuml 22.08 vs cugraph 23.04) among 30 recipe
   entries, with real solves. Target: at most 2*ceil(log2 n)+2 solves.
Medians of --repeat runs are printed, the two builds alternating so neither gets a warmer cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from envcheck.resolve.conflicts import SolveOutcome, diagnose  # noqa: E402
from envcheck.resolve.recipe import load_recipe  # noqa: E402
from envcheck.resolve.solve import SolveFailed, solve_specs, virtual_packages  # noqa: E402
from envcheck.resolve.solve_recipe import exclusion_constraints  # noqa: E402
from tests.support.channel import write_channel  # noqa: E402
from tests.support.world_filler import filler_packages, filler_roots  # noqa: E402
from tests.support.worlds import NEUTRAL, world_packages  # noqa: E402

# The bare solve: nothing of envcheck, only what any rattler user writes. It leaves through
# os._exit because rattler 0.28 may crash while the interpreter shuts down after a solve.
BARE = r"""
import asyncio, json, os, sys, time
t0 = time.perf_counter()
import rattler
from rattler import BuildString, GenericVirtualPackage, PackageName, Version
req = json.loads(sys.argv[1])
vps = [GenericVirtualPackage(PackageName(n), Version(v), BuildString(b))
       for n, v, b in req["virtual_packages"]]
t1 = time.perf_counter()
records = asyncio.run(rattler.solve(req["channels"], req["specs"],
                                    platforms=[req["platform"], "noarch"],
                                    virtual_packages=vps,
                                    constraints=req["constraints"] or None))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "solve_s": t2 - t1, "records": len(records)}), flush=True)
os._exit(0)
"""


def _triples(vps: dict[str, str]) -> list[tuple[str, str, str]]:
    # __archspec carries the microarchitecture in its build string (as envcheck passes it)
    return [(n, "1", v) if n == "__archspec" else (n, v, "0") for n, v in sorted(vps.items())]


def bare_solve(request: dict) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", BARE, json.dumps(request)],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - t, json.loads(out.stdout)


def envcheck_build(recipe: Path, out: Path, channel: str | None) -> float:
    """Wall time of one `envcheck build` process; ``channel`` None runs `--check` instead."""
    more = ["--channel-data", channel] if channel else ["--check"]
    t = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "envcheck", "build", str(recipe), "--out", str(out), *more,
         "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )  # fmt: skip
    took = time.perf_counter() - t
    if run.returncode != 0:
        raise SystemExit(f"envcheck build failed ({run.returncode}): {run.stderr.strip()}")
    return took


def _compare(label: str, specs: list[str], shipped, url: str, work: Path, repeat: int) -> dict:
    """Median wall times of envcheck build and a bare solve of ``specs``, fresh processes."""
    seed = {
        "name": "bench-seed-" + str(len(specs)),
        "channels": [url],
        "platforms": ["linux-64"],
        "system": dict(shipped.system),
        "dependencies": specs,
        "exclude": [{"name": e.name, "reason": e.reason} for e in shipped.exclude],
    }
    seed_path = work / f"{seed['name']}.yaml"
    seed_path.write_text(yaml.safe_dump(seed, sort_keys=False))
    recipe = load_recipe(seed_path)
    vps = virtual_packages(recipe.system, "linux-64")
    request = {
        "channels": [url],
        "specs": specs,
        "platform": "linux-64",
        "virtual_packages": _triples(vps),
        "constraints": exclusion_constraints(recipe),
    }
    bare_wall, bare_solve_s, build_wall = [], [], []
    n_solved = 0
    for i in range(repeat):
        order = ("bare", "build") if i % 2 == 0 else ("build", "bare")
        for which in order:
            if which == "bare":
                wall, inner = bare_solve(request)
                bare_wall.append(wall)
                bare_solve_s.append(inner["solve_s"])
                n_solved = inner["records"]
            else:
                out = work / f"locks-{seed['name']}-{i}"
                build_wall.append(envcheck_build(seed_path, out, url))
    # again with the lock present (the old lock is read to report what changed), and --check
    rebuild_wall, check_wall = [], []
    for _ in range(repeat):
        rebuild_wall.append(envcheck_build(seed_path, out, url))
        check_wall.append(envcheck_build(seed_path, out, None))
    med_bare, med_build = statistics.median(bare_wall), statistics.median(build_wall)
    med_solve = statistics.median(bare_solve_s)
    ratio = med_build / med_bare
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"seed '{label}': {len(specs)} specs -> {n_solved} packages")
    print(f"  bare rattler.solve, fresh process: {med_bare:.2f} s (solve call {med_solve:.2f} s)")
    print(f"  envcheck build, fresh process:     {med_build:.2f} s")
    print(
        f"  ratio build / bare: {ratio:.2f}x (target <= 1.5x: {verdict});"
        f" build - bare: {med_build - med_bare:+.2f} s"
    )
    med_rebuild, med_check = statistics.median(rebuild_wall), statistics.median(check_wall)
    print(f"  rebuild with the lock present: {med_rebuild:.2f} s; --check: {med_check:.2f} s")
    return {
        "recipe": seed,
        "specs": len(specs),
        "packages": n_solved,
        "bare_process_s": med_bare,
        "bare_solve_call_s": med_solve,
        "build_s": med_build,
        "ratio": ratio,
        "rebuild_s": med_rebuild,
        "check_s": med_check,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="envcheck-bench-"))

    t = time.perf_counter()
    world = world_packages()
    filler = filler_packages(args.records - len(world))
    url = write_channel(work / "channel", [*world, *filler])
    n_records = len(world) + len(filler)
    print(
        f"channel: {n_records} records ({len(world)} RAPIDS-shaped + {len(filler)} libraries),"
        f" written in {time.perf_counter() - t:.1f} s"
    )

    # the seed recipes: rapids-22.08-el7's conda part (pip resolution is not a conda solve),
    # alone and with eight libraries from the deep graph (a solve of real weight)
    shipped = load_recipe(ROOT / "recipes" / "rapids-22.08-el7.yaml")
    seeds = {
        "rapids-22.08-el7 conda entries": list(shipped.dependencies),
        "same + 8 deep libraries": [*shipped.dependencies, *filler_roots(filler)],
    }
    timings = {}
    for label, specs in seeds.items():
        timings[label] = _compare(label, specs, shipped, url, work, args.repeat)
    seed = timings["same + 8 deep libraries"]["recipe"]

    # diagnosis: one culprit pair among 30 entries, real solves through envcheck's solver;
    # four entries reach into the deep library graph so that every probe is a real workload
    deep = filler_roots(filler, 4)
    entries = [*NEUTRAL[:9], "cuml=22.08", *deep, *NEUTRAL[9:24], "cugraph=23.04"]
    assert len(entries) == 30
    el7 = virtual_packages({"cuda": "11.5", "glibc": "2.17"}, "linux-64")

    def solve(sub):
        try:
            solve_specs(sub, [url], "linux-64", el7)
        except SolveFailed as e:
            return SolveOutcome(False, e.message)
        return SolveOutcome(True)

    solve(["python=3.8"])  # start the solver process and load the channel once, untimed
    bound = 2 * math.ceil(math.log2(len(entries))) + 2
    diag = {}
    for guided in (True, False):
        runs = [
            diagnose(entries, solve, virtual_packages=el7, guided=guided)
            for _ in range(args.repeat)
        ]
        d = runs[0]
        diag["guided" if guided else "bisection"] = {
            "entries": list(d.entries),
            "solves": d.solves,
            "seconds": statistics.median(r.seconds for r in runs),
            "reasons": list(d.reasons),
        }
        label = "guided by the solver's message" if guided else "bisection alone"
        print(
            f"diagnosis ({label}): {len(entries)} entries -> {', '.join(d.entries)} in "
            f"{d.solves} solves (bound {bound}: {'met' if d.solves <= bound else 'MISSED'}), "
            f"{statistics.median(r.seconds for r in runs):.2f} s"
        )
    print("  " + "; ".join(diag["guided"]["reasons"]))

    # the same, as a user meets it: `envcheck build` of that recipe fails with exit code 5
    clash = {**seed, "name": "bench-clash", "dependencies": entries, "exclude": []}
    clash_path = work / "bench-clash.yaml"
    clash_path.write_text(yaml.safe_dump(clash, sort_keys=False))
    t = time.perf_counter()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "envcheck",
            "build",
            str(clash_path),
            "--out",
            str(work / "locks-clash"),
            "--channel-data",
            url,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    cli_s = time.perf_counter() - t
    print(f"envcheck build of that recipe: exit {run.returncode} in {cli_s:.2f} s:")
    print("  " + run.stderr.strip().replace("\n", "\n  "))
    diag["cli"] = {"exit": run.returncode, "seconds": cli_s, "stderr": run.stderr.strip()}

    for timing in timings.values():
        timing.pop("recipe")
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "records": n_records,
        "repeat": args.repeat,
        "build": timings,
        "diagnosis": diag,
        "bound": bound,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
