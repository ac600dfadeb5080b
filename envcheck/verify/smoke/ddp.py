"""Start torch.distributed through Dask workers: one rank per worker, rendezvous on worker 0.

The approach of dask-pytorch-ddp: pick the ranks' workers, ask worker 0's host for a free port,
then submit one task per worker (pinned to it) that joins the process group with its rank.
All ranks must run at once, so each worker needs a free thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from distributed.comm import get_address_host

from envcheck.verify.facts import NodeFacts
from envcheck.verify.needs import lacks
from envcheck.verify.smoke import tasks as worker_tasks


@dataclass(frozen=True)
class RankPlan:
    """Which workers become ranks (in rank order) and over which backend."""

    backend: str  # "nccl" on GPU workers, "gloo" on CPU workers
    workers: tuple[str, ...]


def is_gpu_worker(f: NodeFacts) -> bool:
    return bool(f.visible_gpu_uuids)


def plan_ranks(facts: Mapping[str, NodeFacts]) -> RankPlan | str:
    """One rank per GPU worker over NCCL, else one per worker over gloo; a str says why not."""
    gpu = sorted(a for a, f in facts.items() if is_gpu_worker(f))
    backend, workers = ("nccl", gpu) if gpu else ("gloo", sorted(facts))
    if not workers:
        return "no workers"
    missing = [a for a in workers if lacks(facts[a], ("torch",))]
    if len(missing) == len(workers):
        return "torch is not installed on any worker"
    if missing:
        return "torch is missing on " + ", ".join(missing)
    seen: dict[tuple[str, int], str] = {}
    for a in workers:
        proc = (facts[a].host, facts[a].pid)
        if proc in seen:
            return (
                f"workers {seen[proc]} and {a} share one process ({facts[a].host} pid "
                f"{facts[a].pid}); torch.distributed needs one process per rank"
            )
        seen[proc] = a
    if any(a.startswith("inproc://") for a in workers):
        return "in-process workers cannot host torch.distributed ranks"
    return RankPlan(backend, tuple(workers))


def rendezvous(client: Any, plan: RankPlan, timeout: float) -> tuple[str, int]:
    """Master address (worker 0's host) and a port free there."""
    master = get_address_host(plan.workers[0])
    fut = client.submit(
        worker_tasks.shipped(worker_tasks.free_port),
        workers=[plan.workers[0]],
        allow_other_workers=False,
        pure=False,
    )
    try:
        return master, int(fut.result(timeout=timeout))
    finally:
        fut.release()


def launch(
    client: Any,
    plan: RankPlan,
    fn: Any,
    *args: Any,
    timeout: float,
    key_prefix: str = "envcheck-ddp",
) -> list[Any]:
    """Submit ``fn(rank, world, master, port, backend, timeout, *args)`` once per rank."""
    master, port = rendezvous(client, plan, timeout)
    world = len(plan.workers)
    remote = worker_tasks.shipped(fn)
    run_id = uuid.uuid4().hex[:12]  # a stale rank of an earlier, hung run must not be reused
    return [
        client.submit(
            remote,
            rank,
            world,
            master,
            port,
            plan.backend,
            float(timeout),
            *args,
            workers=[w],
            allow_other_workers=False,
            pure=False,
            key=f"{key_prefix}-{run_id}-rank{rank}",
        )
        for rank, w in enumerate(plan.workers)
    ]


def expected_sum(world: int) -> float:
    """What every element holds after each rank r contributes r+1 to a sum all-reduce."""
    return world * (world + 1) / 2
