"""envcheck's --bench numbers beside the same operations done bare, in one job (GPU machine).

For each protocol (tcp, ucx) it starts the embedded LocalCUDACluster, gathers facts, runs
envcheck's run_measurements, then on the same cluster and worker pair times a plain Dask
transfer from the client (a result on worker A, a dependent task on worker B, minus the round
trip of a no-op task on B). The all-reduce is compared with plain torch.distributed: one process
per GPU started by torch.multiprocessing, NCCL, the same size, warm-up and iteration count.

    python3 bench/device_bench.py --out results.txt
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envcheck.verify.smoke.measure import GiB, MiB, first_gpu, human_size, run_measurements  # noqa: E402

WARMUP, ITERS = 5, 20


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = {"K": 1 << 10, "M": MiB, "G": GiB}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * unit)


# --- bare Dask transfer (defined here, shipped by value from __main__) ------------------------


def _payload(nbytes: int, gpu: bool) -> object:
    if not gpu:  # lets the bench run (host memory) on a machine without GPUs, as a dry run
        import numpy as np

        return np.random.default_rng().integers(0, 256, size=nbytes, dtype=np.uint8)
    import cupy as cp

    out = cp.random.randint(0, 256, size=nbytes, dtype=cp.uint8)
    cp.cuda.Device().synchronize()
    return out


def _nbytes(x: object) -> int:
    return int(x.nbytes)


def _noop() -> int:
    return 0


def bare_transfer(client, a: str, b: str, nbytes: int, gpu: bool, repeats: int) -> float:
    """GB/s of a plain dependent-task transfer a -> b, timed from the client."""
    from distributed import wait

    pin = dict(allow_other_workers=False, pure=False)
    overhead = min(
        _timed(lambda: client.submit(_noop, workers=[b], **pin).result()) for _ in range(5)
    )
    warm = client.submit(_payload, nbytes, gpu, workers=[a], **pin)
    client.submit(_nbytes, warm, workers=[b], **pin).result()
    del warm
    rates = []
    for _ in range(repeats):
        x = client.submit(_payload, nbytes, gpu, workers=[a], **pin)
        with client.as_current():  # on A before the clock starts; result() would fetch it
            wait([x])
        seconds = _timed(lambda x=x: client.submit(_nbytes, x, workers=[b], **pin).result())
        rates.append(nbytes / max(seconds - overhead, 1e-9) / 1e9)
        del x
    return statistics.median(rates)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --- bare torch.distributed all-reduce ------------------------------------------------------


def _bare_rank(rank: int, world: int, port: int, nbytes: int, queue) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    t = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(ITERS):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    queue.put((rank, (time.perf_counter() - t0) / ITERS))
    dist.destroy_process_group()


def bare_allreduce(world: int, nbytes: int) -> tuple[float, float]:
    """(algbw, busbw) GB/s of plain torch.distributed over NCCL, one process per GPU."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_bare_rank, args=(r, world, port, nbytes, queue)) for r in range(world)
    ]
    for p in procs:
        p.start()
    seconds = max(queue.get(timeout=300)[1] for _ in procs)
    for p in procs:
        p.join(timeout=60)
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * 2 * (world - 1) / world


# --- the job ----------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocols", default="tcp,ucx")
    ap.add_argument("--sizes", default="64MiB,256MiB,1GiB,4GiB")
    ap.add_argument("--allreduce", default="256MiB,1GiB")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    ar_sizes = [parse_size(s) for s in args.allreduce.split(",")]
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    from envcheck.verify.cluster.connect import embedded_cluster, gpu_count
    from envcheck.verify.cluster.gather import gather_facts

    say(f"# envcheck device bench, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    say(f"host {socket.gethostname()}, {gpu_count()} GPUs, python {sys.version.split()[0]}")
    say(
        f"env NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')!r} "
        f"UCX_TLS={os.environ.get('UCX_TLS')!r}"
    )
    world = gpu_count()
    # plain torch.distributed first, while no cluster holds the GPUs
    bare_ar: dict[str, float] = {}
    if world >= 2:
        for nbytes in ar_sizes:
            algbw, busbw = bare_allreduce(world, nbytes)
            label = f"nccl all-reduce {human_size(nbytes)}"
            bare_ar[f"{label} algbw"], bare_ar[f"{label} busbw"] = algbw, busbw
    rows: list[tuple[str, str, float, float | None, float | None, str]] = []
    for protocol in args.protocols.split(","):
        t0 = time.perf_counter()
        try:
            with embedded_cluster(protocol) as client:
                facts = dict(gather_facts(client, 60).workers)
                took = time.perf_counter() - t0
                say(f"\n## {protocol}: {len(facts)} workers up, facts gathered in {took:.1f} s")
                for addr, f in sorted(facts.items()):
                    g = first_gpu(f)
                    desc = (
                        f"{g.name} {g.uuid} nvlinks={g.nvlinks_active} "
                        f"pcie=gen{g.pcie_gen}x{g.pcie_width}"
                        if g
                        else "no GPU"
                    )
                    say(f"  {addr}: {desc}")
                t1 = time.perf_counter()
                ms = run_measurements(
                    client,
                    facts,
                    sizes=sizes,
                    allreduce_sizes=ar_sizes,
                    repeats=args.repeats,
                    max_pairs=1,
                    timeout=300,
                )
                say(f"  envcheck measurements: {time.perf_counter() - t1:.1f} s")
                for p in ms.problems:
                    say(f"  PROBLEM {p.status.value} {p.check} {p.node}: {p.message}")
                for m in ms:
                    bare = bare_ar.get(m.name)
                    if m.name.startswith("transfer"):
                        a, b = m.node.split(" -> ")
                        count, unit = m.name.rsplit(" ", 2)[-2:]
                        nbytes = parse_size(count + unit)
                        gpu = "GPU" in m.name
                        bare = bare_transfer(client, a, b, nbytes, gpu, args.repeats)
                    rows.append((protocol, m.name, m.value, bare, m.reference, m.verdict))
        except Exception as exc:  # one protocol failing must not hide the other's numbers
            say(f"  {protocol} FAILED: {type(exc).__name__}: {exc}")
    header = (
        "protocol",
        "measurement",
        "envcheck GB/s",
        "bare GB/s",
        "ratio",
        "reference",
        "verdict",
    )
    say("\n| " + " | ".join(header) + " |")
    say("|---|---|---|---|---|---|---|")
    for protocol, name, value, bare, ref, verdict in rows:
        ratio = f"{value / bare:.2f}" if bare else ""
        say(
            f"| {protocol} | {name} | {value:.3g} | {'' if bare is None else f'{bare:.3g}'} | "
            f"{ratio} | {'' if ref is None else f'{ref:g}'} | {verdict} |"
        )
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
