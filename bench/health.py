"""Benchmark: what the health facts cost, against the same code without them.

1. collect_node_facts() warm, health=False (the collection as it was) vs health=True,
   interleaved in one process; and each new host read on its own: rlimits, /dev/shm statvfs,
   /sys/class/net, /sys/class/infiniband, /sys/module, /proc/uptime, and the kernel log
   (/dev/kmsg first read and incremental re-read; a 10,000-line log file).
2. verify cluster's facts round + checks (as bench/verify.py times it) on a LocalCluster,
   interleaved on the same cluster: CollectOptions(health=False) (before: no health reads,
   no health checks' facts) vs the default (workers read their health; client and scheduler
   do not). Target: after within 10% of before.

No GPU is needed; on a GPU machine the NVML reads are included in "health=True".

    python bench/health.py [--repeat 200] [--workers 1,8] [--rounds 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
warnings.filterwarnings("ignore", "The pynvml package is deprecated", FutureWarning)

from bench.timing import median_seconds  # noqa: E402
from envcheck.verify import facts as F  # noqa: E402
from envcheck.verify.facts import host, kernel_log  # noqa: E402


def median_us(fn: Callable[[], Any], repeat: int) -> float:
    return median_seconds(fn, repeat) * 1e6


def interleaved(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, float]:
    ta, tb = [], []
    for _ in range(repeat):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta) * 1e6, statistics.median(tb) * 1e6


def host_reads(repeat: int) -> dict[str, float]:
    line = (
        "[ 3947.590120] NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, "
        "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 10 "
        "(FREE) (0xc0000005 0x0)."
    )
    other = "[ 3947.600000] usb 1-1: new high-speed USB device number 2 using xhci_hcd"
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write("\n".join(line if i % 100 == 0 else other for i in range(10_000)) + "\n")
        log = f.name
    out = {
        "rlimits (memlock, nofile)": median_us(
            lambda: (host._rlimit("RLIMIT_MEMLOCK"), host._rlimit("RLIMIT_NOFILE")), repeat
        ),
        "/dev/shm statvfs": median_us(lambda: os.statvfs("/dev/shm"), repeat),
        f"/sys/class/net ({len(os.listdir('/sys/class/net'))} interfaces)": median_us(
            F.read_net_interfaces, repeat
        ),
        "/sys/class/infiniband": median_us(F.read_ib_ports, repeat),
        "/sys/module (6 names)": median_us(
            lambda: [os.path.isdir(f"/sys/module/{m}") for m in F.KERNEL_MODULES], repeat
        ),
        "/proc/uptime": median_us(host._uptime, repeat),
        "kernel log file, 10,000 lines (100 Xid)": median_us(
            lambda: F.read_kernel_log(log), max(5, repeat // 20)
        ),
    }
    os.unlink(log)
    if os.access("/dev/kmsg", os.R_OK):

        def first() -> None:
            state = kernel_log._KMSG_STATE.pop("/dev/kmsg", None)
            if state:
                os.close(state[0])
            F.read_kernel_log("/dev/kmsg")

        out["/dev/kmsg first read (whole ring buffer)"] = median_us(first, max(5, repeat // 20))
        out["/dev/kmsg re-read (new records only)"] = median_us(
            lambda: F.read_kernel_log("/dev/kmsg"), repeat
        )
        out["_kmsg_records"] = float(F.read_kernel_log("/dev/kmsg")[3])
    out["collect_host_health (no NVIDIA driver: no kernel log)"] = median_us(
        F.collect_host_health, repeat
    )
    return out


def cluster_round(client: Any, health: bool | None) -> int:
    from envcheck.verify.across.pinning import check_pinning
    from envcheck.verify.across.skew import skew_report
    from envcheck.verify.across.workers import (
        check_stack_agreement,
        cluster_pids_by_host,
        node_checks,
        node_checks_per_worker,
    )
    from envcheck.verify.cluster.gather import CollectOptions, gather_facts
    from envcheck.verify.expectations import Expectations

    run_checks = node_checks(False)
    cluster = gather_facts(client, 60, CollectOptions(health=health))
    assert not cluster.errors, cluster.errors
    processes = cluster.by_process()
    _, results = skew_report(processes)
    results += node_checks_per_worker(
        cluster.workers, Expectations(), run_checks, cluster_pids_by_host(processes)
    )
    results += check_stack_agreement(cluster.workers) if health is not False else []
    results += check_pinning(cluster.workers)
    return len(results)


def bench_cluster(n: int, rounds: int) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = Client(cluster, set_as_default=False)
    try:
        client.wait_for_workers(n, timeout=300)
        results = {False: cluster_round(client, False), None: cluster_round(client, None)}
        for _ in range(2):  # warm both (facts package loaded, kmsg opened, caches filled)
            cluster_round(client, False)
            cluster_round(client, None)
        before, after = [], []
        for _ in range(rounds):
            for health, out in ((False, before), (None, after)):
                t0 = time.perf_counter()
                cluster_round(client, health)
                out.append(time.perf_counter() - t0)
    finally:
        client.close()
        cluster.close()
    b, a = statistics.median(before), statistics.median(after)
    return {
        "workers": n,
        "before_ms": b * 1e3,
        "after_ms": a * 1e3,
        "ratio": a / b,
        "before_all_ms": sorted(x * 1e3 for x in before),
        "after_all_ms": sorted(x * 1e3 for x in after),
        "results_before": results[False],
        "results_after": results[None],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--workers", default="1,8", help="cluster sizes; '' for none")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json")
    args = p.parse_args(argv)
    F.collect_node_facts()  # first collection (imports, caches) out of the way
    without, with_ = interleaved(
        lambda: F.collect_node_facts(health=False),
        lambda: F.collect_node_facts(health=True),
        args.repeat,
    )
    summary: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "gpus": len(F.collect_node_facts().gpus),
        "collect_node_facts_us": {
            "health=False": without,
            "health=True": with_,
            "ratio": with_ / without,
        },
        "host_reads_us": host_reads(args.repeat),
        "cluster": [],
    }
    print(
        f"collect_node_facts warm: {without:.0f} us without health, {with_:.0f} us with "
        f"({with_ / without:.2f}x, +{with_ - without:.0f} us)"
    )
    for name, us in summary["host_reads_us"].items():
        print(f"  {name}: {us:.1f}" + ("" if name.startswith("_") else " us"))
    for n in [int(x) for x in args.workers.split(",") if x]:
        r = bench_cluster(n, args.rounds)
        summary["cluster"].append(r)
        print(
            f"{n:>3} workers: facts round + checks {r['before_ms']:.1f} ms before, "
            f"{r['after_ms']:.1f} ms after ({r['ratio']:.2f}x; results {r['results_before']}"
            f" -> {r['results_after']}); spread before {r['before_all_ms'][0]:.1f}-"
            f"{r['before_all_ms'][-1]:.1f}, after {r['after_all_ms'][0]:.1f}-"
            f"{r['after_all_ms'][-1]:.1f} ms",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
