"""The gemm check's matrix multiply against a bare torch.matmul loop of the same size (GPU).

Two ways of running the check's GEMM, each against a bare loop of torch.matmul into the same
output, alternating, on CUDA device 0:

- `inproc`: the GEMM code of envcheck/verify/node/gemm.py (the same source the load child
  executes) run in this process;
- `load`: verify node --level 2's own path (load.run_load: the child process, with this
  process reading NVML meanwhile), its GemmRun for GPU 0, with CUDA_VISIBLE_DEVICES=0.

Prints each TFLOPS and the ratio (target: the check within 5 % of bare).

    python3 bench/gpu_gemm.py [--seconds 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")  # before torch: the load runs GPU 0 only
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from envcheck.verify.node.gemm import GEMM_CHILD, N  # noqa: E402


def envcheck_gemm(seconds: float) -> dict[str, float]:
    got: dict[str, float] = {}

    def out(**kw: object) -> None:
        if "tflops" in kw:
            got[str(kw["dtype"])] = float(kw["tflops"])  # type: ignore[arg-type]

    # the child's definitions, with count 0 so its own loop runs nothing; its time per dtype
    # is max(1, seconds / 4)
    ns = {
        "torch": torch,
        "time": time,
        "json": json,
        "framework": "torch",
        "count": 0,
        "seconds": seconds * 4,
        "out": out,
    }
    exec(GEMM_CHILD, ns)
    ns["gemm_torch"](0)
    return got


def load_gemm(seconds: float) -> dict[str, float]:
    """verify node --level 2's load (copies for `seconds * 4`, then the GEMMs for `seconds`
    each), as verify node runs it: TFLOPS per dtype of GPU 0."""
    from envcheck.verify.facts import collect_node_facts
    from envcheck.verify.node.load import run_load

    facts = collect_node_facts(health=True)
    facts, _, _ = run_load(facts, seconds * 4, framework="torch")
    return {g.dtype: g.tflops for g in facts.gemm if not g.error}


def bare(dtype: torch.dtype, seconds: float) -> float:
    torch.backends.cuda.matmul.allow_tf32 = False
    # the check's inputs (uniform [-1, 1)): a GPU's power, and so its clock, depends on the data
    a = (torch.rand(N, N, device="cuda:0") * 2 - 1).to(dtype)
    b = (torch.rand(N, N, device="cuda:0") * 2 - 1).to(dtype)
    c = torch.matmul(a, b)
    torch.cuda.synchronize(0)
    k, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        for _ in range(4):
            torch.matmul(a, b, out=c)
        k += 4
        torch.cuda.synchronize(0)
    tflops = 2.0 * N**3 * k / (time.perf_counter() - t) / 1e12
    del a, b, c
    torch.cuda.empty_cache()
    return tflops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ways", default="inproc,load")
    args = ap.parse_args()
    half = torch.bfloat16 if torch.cuda.get_device_capability(0) >= (8, 0) else torch.float16
    ways = {"inproc": envcheck_gemm, "load": load_gemm}
    ours: dict[tuple[str, str], list[float]] = {}
    base: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for way in args.ways.split(","):
            for name, value in ways[way](args.seconds).items():
                ours.setdefault((way, name), []).append(value)
            for dt in (torch.float32, half):
                base.setdefault(str(dt).split(".")[-1], []).append(bare(dt, args.seconds))
    print(
        f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, n={N}, "
        f"{args.seconds:g} s per run, median of {args.repeats}"
    )
    for (way, name), values in sorted(ours.items()):
        o, b = statistics.median(values), statistics.median(base[name])
        print(
            f"{way:6s} {name:9s} envcheck gemm {o:8.1f} TFLOPS   bare torch.matmul {b:8.1f} "
            f"TFLOPS   ratio {o / b:.3f} (target >= 0.95)"
        )


if __name__ == "__main__":
    main()
