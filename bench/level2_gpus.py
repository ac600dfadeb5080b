"""verify node --level 2 on every visible GPU at once against one GPU and a bare matmul loop.

Whole processes, alternating, each `repeats` times:
- all:  `python3 -m envcheck verify node --level 2` seeing every GPU;
- one:  the same with CUDA_VISIBLE_DEVICES=0;
- bare: a bf16 torch.matmul loop (8192^3, the check's inputs, a quarter second of warm-up,
  then 1 s timed: what the check times with the default --load-seconds 4) on every GPU at
  once, one process per GPU.
Prints each wall time (medians), the ratio all/one (target <= 1.3) and the GEMM per GPU
(TFLOPS from the saved facts' gemm runs) against the bare loop's.

    python3 bench/level2_gpus.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from envcheck.verify.facts import collect_node_facts  # noqa: E402
from envcheck.verify.node.gemm import N  # noqa: E402
from tests.support.gpus import gpu_env  # noqa: E402

BARE = """
import json, sys, time, torch
N = int(sys.argv[1])
torch.backends.cuda.matmul.allow_tf32 = False
a = (torch.rand(N, N, device="cuda:0") * 2 - 1).to(torch.bfloat16)
b = (torch.rand(N, N, device="cuda:0") * 2 - 1).to(torch.bfloat16)
c = torch.matmul(a, b)
t = time.perf_counter()
while time.perf_counter() - t < 0.25:
    torch.matmul(a, b, out=c)
torch.cuda.synchronize(0)
k, t = 0, time.perf_counter()
while time.perf_counter() - t < 1.0:
    for _ in range(4):
        torch.matmul(a, b, out=c)
    k += 4
    torch.cuda.synchronize(0)
print(json.dumps({"tflops": 2.0 * N**3 * k / (time.perf_counter() - t) / 1e12}))
"""


def envcheck_level2(tmp: Path, **env: str) -> tuple[float, int, dict[tuple[int, str], float],
                                                       list[str]]:
    """One whole `verify node --level 2`: wall s, exit code, (GPU, dtype) -> TFLOPS, and its
    gpu-load / gemm results that did not pass."""
    report, facts = tmp / "report.json", tmp / "facts.json"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--level", "2", "--quiet",
         "--json", str(report), "--save-facts", str(facts)],
        capture_output=True, text=True, env=gpu_env(**env), timeout=600,
    )
    wall = time.perf_counter() - t0
    if not report.exists() or not facts.exists():
        return wall, proc.returncode, {}, [proc.stderr.strip()[-300:]]
    gemm = {(g["index"], g["dtype"]): g["tflops"] for g in json.loads(facts.read_text())["gemm"]
            if not g["error"]}
    bad = [f"{r['status']} {r['check']}: {r['message']}"
           for r in json.loads(report.read_text())["results"]
           if r["check"] in ("gpu-load", "gemm") and r["status"] != "pass"]
    return wall, proc.returncode, gemm, bad


def bare_all(indices: list[int]) -> tuple[float, dict[int, float]]:
    """The bare bf16 loop on every GPU at once, a process each: wall s, GPU -> TFLOPS."""
    t0 = time.perf_counter()
    procs = {i: subprocess.Popen([sys.executable, "-c", BARE, str(N)], stdout=subprocess.PIPE,
                                 text=True, env=gpu_env(CUDA_VISIBLE_DEVICES=str(i)))
             for i in indices}
    got = {}
    for i, p in procs.items():
        out = p.communicate(timeout=600)[0]
        got[i] = json.loads(out.strip().splitlines()[-1])["tflops"] if p.returncode == 0 else 0.0
    return time.perf_counter() - t0, got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    gpus = collect_node_facts().gpus
    if not gpus:
        sys.exit("no GPU: run on a GPU host")
    indices = [g.index for g in gpus]
    walls: dict[str, list[float]] = {"all": [], "one": [], "bare": []}
    tflops: dict[str, dict[tuple[int, str], list[float]]] = {"all": {}, "one": {}, "bare": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for way, env in (("all", {}), ("one", {"CUDA_VISIBLE_DEVICES": "0"})):
                wall, rc, gemm, bad = envcheck_level2(Path(tmp), **env)
                walls[way].append(wall)
                for key, value in gemm.items():
                    tflops[way].setdefault(key, []).append(value)
                print(f"run {r + 1} {way}: {wall:.1f} s, exit {rc}", *bad, sep="\n  ",
                      flush=True)
            wall, got = bare_all(indices)
            walls["bare"].append(wall)
            for i, value in got.items():
                tflops["bare"].setdefault((i, "bfloat16"), []).append(value)
            print(f"run {r + 1} bare: {wall:.1f} s", flush=True)
    med = {way: statistics.median(v) for way, v in walls.items()}
    print(f"\n{len(gpus)} x {gpus[0].name}, n={N}, medians of {args.repeats} whole processes")
    print(f"verify node --level 2, all {len(gpus)} GPUs: {med['all']:.1f} s")
    print(f"verify node --level 2, GPU 0 only:        {med['one']:.1f} s")
    print(f"bare bf16 loop, {len(gpus)} processes at once:  {med['bare']:.1f} s")
    print(f"ratio all/one: {med['all'] / med['one']:.2f} (target <= 1.3)")
    for i in indices:
        row = {way: statistics.median(tflops[way].get((i, "bfloat16"), [0.0]))
               for way in ("all", "one", "bare")}
        fp32 = statistics.median(tflops["all"].get((i, "float32"), [0.0]))
        one = f"{row['one']:7.1f}" if i == 0 else "      -"
        ratio = row["all"] / row["bare"] if row["bare"] else 0.0
        print(f"GPU {i}: bf16 TFLOPS all {row['all']:7.1f}  one {one}  bare {row['bare']:7.1f}"
              f"  all/bare {ratio:.3f}; fp32 all {fp32:.1f}")


if __name__ == "__main__":
    main()
