"""verify cluster's facts round + checks against `client.get_versions(check=True)`.

For LocalClusters of 1, 8 and 32 worker processes (one thread each, with nannies, as the
embedded default starts them), in the same run on the same cluster:

- envcheck: gather_facts (client, scheduler, every worker) + skew table + per-worker node
  checks folded per host + GPU pinning: what `envcheck verify cluster --smoke none` does
  between connecting and rendering;
- round trip only: the same fan-out with a runner that returns a minimal facts dict, to
  separate the mechanics from the collector;
- distributed: client.get_versions(check=True).

Cold = first call on a fresh cluster (envcheck: the source compiles on each worker);
warm = median of the next --repeat calls, interleaved. Prints a table and the ratios the
targets are about: warm envcheck / warm get_versions (target <= 3) and warm envcheck at 32
workers / at 1 worker (target <= 2).

    python bench/verify.py [--workers 1,8,32] [--repeat 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

warnings.filterwarnings("ignore", "The pynvml package is deprecated", FutureWarning)


def minimal_runner(digest, source, role, kwargs, dask_worker=None, dask_scheduler=None):
    """Facts a process reports without looking at anything: the round trip's floor."""
    import os
    import platform
    import socket

    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "user": "",
        "role": role,
        "address": "",
        "python": platform.python_version(),
        "python_executable": "",
        "platform": "",
        "glibc": "",
    }


def envcheck_round(client: Any, runner: Callable[..., Any] | None = None) -> int:
    """Facts + checks, as verify cluster runs them; returns the number of results."""
    from envcheck.verify.across.pinning import check_pinning
    from envcheck.verify.across.skew import skew_report
    from envcheck.verify.across.workers import (
        cluster_pids_by_host,
        kept_node_checks,
        node_checks,
        node_checks_per_worker,
    )
    from envcheck.verify.cluster.gather import gather_facts
    from envcheck.verify.expectations import Expectations

    run_checks = kept_node_checks(True)  # as cluster_command.verify does
    if run_checks is not None:
        cluster = gather_facts(client, 60, runner=runner)
    else:
        with ThreadPoolExecutor(1) as pool:
            checks = pool.submit(node_checks, True)
            cluster = gather_facts(client, 60, runner=runner)
            run_checks = checks.result()
    assert not cluster.errors, cluster.errors
    processes = cluster.by_process()
    _, results = skew_report(processes)
    results += node_checks_per_worker(
        cluster.workers, Expectations(), run_checks, cluster_pids_by_host(processes)
    )
    results += check_pinning(cluster.workers)
    return len(results)


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_one(n: int, repeat: int) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    from envcheck.verify import shipping

    shipping.facts_payload.cache_clear()  # cold means cold on both sides
    t0 = time.perf_counter()
    with (
        LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        client.wait_for_workers(n, timeout=300)
        start = time.perf_counter() - t0
        cold_env = timed(lambda: envcheck_round(client))
        cold_gv = timed(lambda: client.get_versions(check=True))
        env, floor, gv = [], [], []
        for _ in range(repeat):
            env.append(timed(lambda: envcheck_round(client)))
            floor.append(timed(lambda: envcheck_round(client, runner=minimal_runner)))
            gv.append(timed(lambda: client.get_versions(check=True)))
    return {
        "workers": n,
        "cluster_start_s": start,
        "envcheck_cold_s": cold_env,
        "get_versions_cold_s": cold_gv,
        "envcheck_warm_s": statistics.median(env),
        "round_trip_only_s": statistics.median(floor),
        "get_versions_warm_s": statistics.median(gv),
        # the shared VM is noisy: the whole spread of the warm rounds, not only the median
        "envcheck_warm_all_s": sorted(env),
        "round_trip_only_all_s": sorted(floor),
        "get_versions_warm_all_s": sorted(gv),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,8,32", help="cluster sizes, comma separated")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", help="also write the numbers here")
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.workers.split(",")]
    rows = []
    for n in sizes:
        rows.append(bench_one(n, args.repeat))
        r = rows[-1]
        print(
            f"{n:>3} workers: envcheck warm {r['envcheck_warm_s'] * 1e3:7.1f} ms"
            f" (round trip only {r['round_trip_only_s'] * 1e3:6.1f} ms),"
            f" get_versions warm {r['get_versions_warm_s'] * 1e3:6.1f} ms,"
            f" ratio {r['envcheck_warm_s'] / r['get_versions_warm_s']:.1f}x"
            f" (envcheck {min(r['envcheck_warm_all_s']) * 1e3:.1f}-"
            f"{max(r['envcheck_warm_all_s']) * 1e3:.1f},"
            f" get_versions {min(r['get_versions_warm_all_s']) * 1e3:.1f}-"
            f"{max(r['get_versions_warm_all_s']) * 1e3:.1f});"
            f" cold {r['envcheck_cold_s'] * 1e3:.0f} ms vs {r['get_versions_cold_s'] * 1e3:.0f} ms",
            flush=True,
        )
    by = {r["workers"]: r for r in rows}
    summary: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "rows": rows,
        "ratio_vs_get_versions": {
            n: r["envcheck_warm_s"] / r["get_versions_warm_s"] for n, r in by.items()
        },
    }
    if 1 in by and 32 in by:
        summary["scale_32_vs_1"] = by[32]["envcheck_warm_s"] / by[1]["envcheck_warm_s"]
        summary["get_versions_scale_32_vs_1"] = (
            by[32]["get_versions_warm_s"] / by[1]["get_versions_warm_s"]
        )
        print(
            f"32 vs 1 worker: envcheck {summary['scale_32_vs_1']:.1f}x,"
            f" get_versions {summary['get_versions_scale_32_vs_1']:.1f}x"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
