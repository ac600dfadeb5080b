"""The judging layer alone at scale, on facts made here: verify cluster's (pipeline.judge, its
tables, the text report) for workers spread over hosts, verify job's (run_job_checks) for
ranks. Each: seconds and tracemalloc's peak, at the size asked and at a tenth of it, so that the
growth (linear or not) shows beside the numbers. bench/scale.py prints these."""

from __future__ import annotations

import dataclasses
import io
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from envcheck.report import Report
from envcheck.verify.facts import NodeFacts, collect_node_facts
from envcheck.verify.facts.model import Gpu

GPUS_PER_HOST = 8


def _base() -> NodeFacts:
    return collect_node_facts("worker", "tcp://127.0.0.1:1")


def host_gpus(host: int) -> tuple[Gpu, ...]:
    return tuple(
        Gpu(index=i, uuid=f"GPU-{host:08x}-0000-0000-0000-{i:012x}", name="NVIDIA H200",
            memory_total_mib=143771, memory_used_mib=500, compute_capability=(9, 0),
            pci_bus_id=f"00000000:{0x18 + i:02X}:00.0", nvlinks_active=18)
        for i in range(GPUS_PER_HOST))


def worker_facts(base: NodeFacts, workers: int, hosts: int) -> dict[str, NodeFacts]:
    """``workers`` workers spread evenly over ``hosts`` hosts, each pinned to its own GPU of
    its host (GPU i of a host for its i-th worker, modulo 8)."""
    per = max(1, workers // hosts)
    out = {}
    for w in range(workers):
        h, slot = divmod(w, per)
        gpus = host_gpus(h)
        address = f"tcp://10.0.{h // 250}.{h % 250 + 1}:{40000 + slot}"
        out[address] = dataclasses.replace(
            base, host=f"node{h:04d}", pid=10_000 + w, role="worker", address=address,
            nvml_error="", driver_version="580.95.05", cuda_driver_version="13.0", gpus=gpus,
            visible_gpu_uuids=(gpus[slot % GPUS_PER_HOST].uuid,),
            env={**base.env, "CUDA_VISIBLE_DEVICES": str(slot % GPUS_PER_HOST)},
            own_pids=(10_000 + w,))
    return out


def measured(fn: Callable[[], Any]) -> tuple[float, float, int, Any]:
    """(CPU seconds, wall seconds, tracemalloc's peak bytes, fn's value): once to warm the
    imports, once timed, once under tracemalloc (which slows each allocation, so not while
    timed). The judge is one thread that waits for nothing: on a loaded machine its wall time
    counts the other processes' turns, its CPU time does not."""
    fn()
    t, w = time.process_time(), time.perf_counter()
    value = fn()
    took, walled = time.process_time() - t, time.perf_counter() - w
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return took, walled, peak, value


def _cluster_once(base: NodeFacts, workers: int, hosts: int) -> tuple[float, float, int, int]:
    from envcheck.report_text import render
    from envcheck.verify.across.processes import ClusterFacts
    from envcheck.verify.across.workers import node_checks
    from envcheck.verify.cluster.pipeline import judge
    from envcheck.verify.expectations import Expectations

    exp = Expectations()
    checks = node_checks(False, exp.skip)
    cluster = ClusterFacts(
        client=dataclasses.replace(base, role="client", address=""),
        scheduler=dataclasses.replace(base, role="scheduler", address="tcp://10.0.0.1:8786"),
        workers=worker_facts(base, workers, hosts))

    def run() -> int:
        results, tables = judge(cluster, exp, checks)
        out = io.StringIO()
        render(Report("verify cluster", tuple(results), tables=tuple(tables)),
               console=_console(out))
        return len(out.getvalue().splitlines())

    return measured(run)


def _console(out: io.StringIO) -> Any:
    from rich.console import Console

    return Console(file=out, width=100, no_color=True)


def judge_cluster(workers: int, hosts: int) -> str:
    """One line: the cluster judge's seconds and peak memory at ``workers`` and a tenth."""
    base = _base()
    small = _cluster_once(base, max(1, workers // 10), max(1, hosts // 10))
    big = _cluster_once(base, workers, hosts)
    return (f"judge, verify cluster: {workers} workers on {hosts} hosts {_said(big)}, report "
            f"{big[3]} lines; {workers // 10} workers on {max(1, hosts // 10)} hosts "
            f"{_said(small)} (memory x{big[2] / max(1, small[2]):.1f} for x10 workers; "
            "target < 1 s, linear)")


def _said(m: tuple[float, float, int, int]) -> str:
    return f"{m[0]:.2f} CPU s ({m[1]:.2f} s wall), peak {m[2] / 2**20:.1f} MiB"


def rank_jobs(base: NodeFacts, ranks: int) -> Any:
    from envcheck.verify.job.checks import Collective, JobFacts
    from envcheck.verify.job.launch import LaunchInfo
    from envcheck.verify.job.rank import RankFacts

    per = GPUS_PER_HOST
    facts = worker_facts(base, ranks, max(1, ranks // per))
    rows, nodes = [], []
    for r, f in enumerate(facts.values()):
        h, local = divmod(r, per)
        rows.append(RankFacts(
            rank=r, world_size=ranks, local_rank=local, local_world_size=per, node_rank=h,
            launcher="torchrun", host=f.host, pid=f.pid, torch="2.8.0+cu128",
            torch_cuda="12.8", torch_nccl="2.27.3", cuda_available=True, device_count=per,
            device=local, device_uuid=f.gpus[local % per].uuid, device_name="NVIDIA H200",
            capability="9.0", arch_list=("sm_80", "sm_90"),
            cuda_visible_devices=None))
        nodes.append(dataclasses.replace(f, visible_gpu_uuids=tuple(g.uuid for g in f.gpus),
                                         env=base.env))
    want = ranks * (ranks + 1) / 2
    gloo = Collective("gloo", want, tuple((r, want, want) for r in range(ranks)))
    launch = LaunchInfo("torchrun", 0, ranks, 0, per, 0, master_addr=nodes[0].host)
    return JobFacts(launch=launch, ranks=tuple(rows), facts=tuple(nodes), collectives=(gloo,))


def _job_once(base: NodeFacts, ranks: int) -> tuple[float, float, int, int]:
    from envcheck.verify.expectations import Expectations
    from envcheck.verify.job.checks import run_job_checks

    job = rank_jobs(base, ranks)
    took, walled, peak, results = measured(lambda: run_job_checks(job, Expectations()))
    return took, walled, peak, len(results)


def judge_job(ranks: int) -> str:
    """One line: verify job's judge at ``ranks`` ranks and a tenth."""
    base = _base()
    small = _job_once(base, max(1, ranks // 10))
    big = _job_once(base, ranks)
    return (f"judge, verify job: {ranks} ranks on {max(1, ranks // GPUS_PER_HOST)} hosts "
            f"{_said(big)}, {big[3]} results; {ranks // 10} ranks {_said(small)} (memory "
            f"x{big[2] / max(1, small[2]):.1f} for x10 ranks; target < 1 s, linear)")
