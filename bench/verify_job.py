"""`envcheck verify job` under torchrun against a bare torchrun job of the same size.

The baseline is the least a launcher preflight can cost: every rank starts, forms a gloo group
and does one all-reduce (`init_process_group` + `all_reduce`). The subject is the whole
preflight: facts of every rank, the gather, the checks, a known-answer all-reduce and the
verdict on every rank. Whole torchrun invocations, run in turn (A B A B ...), the ratio taken
pair by pair and the median reported. Target: at most 1.5x.

    python bench/verify_job.py [--ranks 4] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pairs import alternate  # noqa: E402

BARE = """
import datetime, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
dist.destroy_process_group()
"""


def _torchrun(ranks: int, port: int, *target: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
            "--nproc-per-node", str(ranks), "--master-addr", "127.0.0.1",
            "--master-port", str(port), *target]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp, "bare.py")
        bare.write_text(BARE)
        port = 29600 + os.getpid() % 1000
        job = _torchrun(args.ranks, port, "-m", "envcheck", "verify", "job", "--timeout", "60")
        base = _torchrun(args.ranks, port + 1, str(bare))
        tj, tb, ratios = alternate(job, base, args.runs, cwd=None)  # warms the arch cache
    load = os.getloadavg()[0]
    print(f"verify job, {args.ranks} CPU ranks under torchrun: {statistics.median(tj):.2f} s; "
          f"bare init_process_group + all_reduce: {statistics.median(tb):.2f} s; "
          f"ratio {statistics.median(ratios):.2f} (median of {args.runs} pairs; "
          f"load average {load:.1f}; target <= 1.5)")  # fmt: skip


if __name__ == "__main__":
    main()
