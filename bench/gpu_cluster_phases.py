"""Where `verify cluster`'s smoke time goes on a GPU host: each piece timed alone.

On the device machine (Dask on PYTHONPATH): a LocalCUDACluster's start, the first and second
trivial task on every worker, `import torch` in a bare process (alone and one per GPU at
once) and in every worker at once, the GPU-kernel task, the dask.array test, the torch-ddp
ranks (warm), and the cluster's close. Prints one line per piece, with the ratios that
matter: a worker's import against the bare processes', and each DDP run's wall time against
its slowest rank's own phases (the rest is the reply's way back to the client).

    python3 bench/gpu_cluster_phases.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envcheck.verify.smoke import tasks  # noqa: E402


def timed_import() -> float:
    t = time.perf_counter()
    import torch  # noqa: F401

    return time.perf_counter() - t


def stamp() -> float:
    return time.time()


def each(client, workers, fn, *args):  # noqa: ANN001, ANN002
    t0 = time.time()
    futs = [client.submit(tasks.shipped(fn), *args, workers=[w], allow_other_workers=False,
                          pure=False) for w in workers]
    got = client.gather(futs)
    return time.time() - t0, got


def bare_imports(n: int) -> list[float]:
    code = "import time; t=time.perf_counter(); import torch; print(time.perf_counter()-t)"
    ps = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
          for _ in range(n)]
    return [float(p.communicate()[0]) for p in ps]


def main() -> None:
    from dask_cuda import LocalCUDACluster
    from distributed import Client, get_task_stream

    from envcheck.verify.smoke import ddp
    from envcheck.verify.smoke.suite import SMOKE_TESTS  # noqa: F401

    print("bare import torch, alone:", [f"{x:.2f}" for x in bare_imports(1)], flush=True)
    t = time.perf_counter()
    cluster = LocalCUDACluster(dashboard_address=None)
    client = Client(cluster)
    print(f"cluster start + client: {time.perf_counter() - t:.2f} s", flush=True)
    workers = sorted(client.scheduler_info()["workers"])
    n = len(workers)
    bare = bare_imports(n)
    print(f"bare import torch, {n} at once:", [f"{x:.2f}" for x in bare], flush=True)
    for k in (1, 2):
        took, got = each(client, workers, stamp)
        print(f"trivial task #{k} on every worker: {took:.2f} s", flush=True)
    took, got = each(client, workers, timed_import)
    print(f"import torch in every worker at once: {took:.2f} s; in-task {got}; "
          f"ratio to the bare imports {max(got) / max(bare):.2f}x", flush=True)
    for k in (1, 2):
        took, _ = each(client, workers, tasks.gpu_kernel, 100_000)
        print(f"gpu-kernel #{k}: {took:.2f} s", flush=True)
    import dask.array as da

    for k in (1, 2):
        t = time.perf_counter()
        ones = da.ones((512, 512), chunks=(256, 256))
        client.compute([(ones @ ones.T).sum(), da.arange(1_000_000, chunks=250_000).sum()],
                       sync=True)
        print(f"array #{k}: {time.perf_counter() - t:.2f} s", flush=True)
    plan = ddp.RankPlan("nccl", tuple(workers))
    for k in (1, 2):
        t, t0 = time.perf_counter(), time.time()
        with get_task_stream(client) as stream:
            futs = ddp.launch(client, plan, tasks.torch_allreduce, 1 << 20, timeout=60)
            launched = time.perf_counter() - t
            got = client.gather(futs)
        wall = time.perf_counter() - t
        in_task = max(sum(g["phases"].values()) for g in got)
        print(f"torch-ddp #{k}: {wall:.2f} s (launched in {launched:.2f} s), "
              f"{wall / in_task:.2f}x its slowest rank's phases ({in_task:.2f} s); "
              f"{[{p: round(v, 2) for p, v in g['phases'].items()} for g in got]}", flush=True)
        for task in stream.data:
            spans = [f"{s['action']} {s['start'] - t0:.2f}-{s['stop'] - t0:.2f}"
                     for s in task["startstops"]]
            print(f"  {task['key'][:40]} on {task['worker']}: {', '.join(spans)}", flush=True)
    t = time.perf_counter()
    client.close()
    cluster.close()
    print(f"close: {time.perf_counter() - t:.2f} s", flush=True)


if __name__ == "__main__":
    main()
