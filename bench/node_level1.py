"""verify node --level 1 as a whole process against nvidia-smi -q, and where its time goes.

Times `python3 -m envcheck verify node --level 1 --no-plugins --quiet` and `nvidia-smi -q`
(each a fresh process, alternating, median of --repeats) and prints the ratio (target <= 1.5).
Then one profile: imports (python -X importtime, top-level modules by cumulative time), the
facts collection with and without the compiled-arch child probe, the NVML reads alone, and the
checks. Needs no dask: verify node imports none (the profile would list it).

    python3 bench/node_level1.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
NODE = [
    sys.executable,
    "-m",
    "envcheck",
    "verify",
    "node",
    "--level",
    "1",
    "--no-plugins",
    "--quiet",
]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
}


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def imports() -> list[tuple[int, str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *NODE[1:]], env=ENV, capture_output=True, text=True
    )
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(2)) <= 1:  # top-level imports only
            rows.append((int(m.group(1)), m.group(3)))
    return sorted(rows, reverse=True)


def in_process() -> dict[str, float]:
    from envcheck.verify.expectations import Expectations
    from envcheck.verify.facts import collect_node_facts
    from envcheck.verify.facts.nvml import _nvml_facts
    from envcheck.verify.node.checks import run_node_checks

    out = {}
    t = time.perf_counter()
    _nvml_facts()
    out["NVML first read (init, identity)"] = time.perf_counter() - t
    t = time.perf_counter()
    collect_node_facts(arch_probe=False)
    out["collect_node_facts, no arch probe"] = time.perf_counter() - t
    t = time.perf_counter()
    facts = collect_node_facts(arch_probe=True)
    out["collect_node_facts, arch probe (child imports torch/cupy)"] = time.perf_counter() - t
    t = time.perf_counter()
    run_node_checks(facts, Expectations(), facts.host, plugins=False)
    out["run_node_checks"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    wall(NODE)  # warm the page cache for both
    wall(["nvidia-smi", "-q"])
    ours, smi = [], []
    for _ in range(args.repeats):
        ours.append(wall(NODE))
        smi.append(wall(["nvidia-smi", "-q"]))
    o, s = statistics.median(ours), statistics.median(smi)
    print(
        f"verify node --level 1: {o:.3f} s   nvidia-smi -q: {s:.3f} s   ratio {o / s:.2f} "
        f"(target <= 1.5), median of {args.repeats}"
    )
    print("\ntop-level imports (cumulative ms):")
    rows = imports()
    for us, name in rows[:12]:
        print(f"  {us / 1000:8.1f}  {name}")
    print(
        "  dask imported: "
        + ("yes" if any(n.split(".")[0] in ("dask", "distributed") for _, n in rows) else "no")
    )
    print("\nin process (s):")
    for name, seconds in in_process().items():
        print(f"  {seconds:8.3f}  {name}")
    profile_collection()


def profile_collection() -> None:
    """Where collect_node_facts' own time goes (its answers kept on disk, as on a rerun)."""
    import cProfile
    import io
    import pstats

    from envcheck.verify.facts import collect_node_facts

    prof = cProfile.Profile()
    prof.runcall(collect_node_facts, health=True)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
    print("\ncollect_node_facts(health=True), cProfile by cumulative time:")
    print("\n".join(out.getvalue().splitlines()[6:40]))


if __name__ == "__main__":
    main()
