"""The gemm check's matrix multiply against a bare torch.matmul loop of the same size (GPU).

Runs verify node --level 2's GEMM code (envcheck/verify/node/gemm.py, the same source the
load child executes) in this process on CUDA device 0, then a bare loop of torch.matmul into
the same output for the same time, alternating, and prints each TFLOPS and the ratio
(target: the check within 5 % of bare).

    python3 bench/gpu_gemm.py [--seconds 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

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
    return 2.0 * N**3 * k / (time.perf_counter() - t) / 1e12


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    half = torch.bfloat16 if torch.cuda.get_device_capability(0) >= (8, 0) else torch.float16
    ours: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name, value in envcheck_gemm(args.seconds).items():
            ours.setdefault(name, []).append(value)
        for dt in (torch.float32, half):
            base.setdefault(str(dt).split(".")[-1], []).append(bare(dt, args.seconds))
    print(
        f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, n={N}, "
        f"{args.seconds:g} s per run, median of {args.repeats}"
    )
    for name in base:
        o, b = statistics.median(ours[name]), statistics.median(base[name])
        print(
            f"{name:9s} envcheck gemm {o:8.1f} TFLOPS   bare torch.matmul {b:8.1f} TFLOPS   "
            f"ratio {o / b:.3f} (target >= 0.95)"
        )


if __name__ == "__main__":
    main()
