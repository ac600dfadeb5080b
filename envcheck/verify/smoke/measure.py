"""Measurements (``--bench``): worker-to-worker transfer bandwidth and all-reduce bandwidth.

Each number carries a reference derived from the topology in the facts (NVLink links x the
per-link rate of the GPU's generation, or the PCIe generation and width; between hosts, the
speed of the network links under the workers' addresses) and a verdict when it falls far
below it, with the fix. Transfers are timed the way Dask moves data: a result on
worker A, a task on worker B that depends on it; the duration is the one B's worker logs for the
fetch (transfer_incoming_log: request, wire, deserialisation), minus the fetch latency of a
1 KiB payload between the same pair, after a warm-up transfer.
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, List

from envcheck.report import Measurement, Result, Status
from envcheck.text import first_line
from envcheck.verify.facts import NodeFacts
from envcheck.verify.needs import lacks
from envcheck.verify.smoke import ddp
from envcheck.verify.smoke import tasks as worker_tasks
from envcheck.verify.smoke.references import (  # noqa: F401 - measure's public names
    FAR_BELOW,
    allreduce_reference,
    allreduce_verdict,
    bus_bandwidth,
    first_gpu,
    network_reference,
    nvlink_rate,
    pair_verdict,
    pcie_practical,
    reference_bandwidth,
    transfer_verdict,
)

MiB = 1 << 20
GiB = 1 << 30
GPU_TRANSFER_SIZES = (64 * MiB, 256 * MiB, 1 * GiB, 4 * GiB)
CPU_TRANSFER_SIZES = (16 * MiB, 64 * MiB)  # host memory on CI machines: keep it quick
GPU_ALLREDUCE_SIZES = (256 * MiB,)
CPU_ALLREDUCE_SIZES = (16 * MiB,)
LATENCY_BYTES = 1024
GROUP = "bench"

class MeasurementList(List[Measurement]):
    """The measurements, plus ``problems``: Results for what could not be measured and why."""

    def __init__(self, items: Sequence[Measurement] = (), problems: Sequence[Result] = ()):
        super().__init__(items)
        self.problems: list[Result] = list(problems)


def pick_pairs(facts: Mapping[str, NodeFacts], max_pairs: int) -> list[tuple[str, str]]:
    """Ring pairs (w0->w1, w1->w2, ...) over GPU workers (all workers when none has a GPU).

    Across hosts: pairs between hosts (a ring over each host's first worker) alternate with
    pairs within a host, so the cap keeps both kinds of link in the measurements.
    """
    gpu = sorted(a for a, f in facts.items() if ddp.is_gpu_worker(f))
    workers = gpu or sorted(facts)
    if len(workers) < 2:
        return []
    hosts: dict[str, list[str]] = {}
    for a in workers:
        hosts.setdefault(facts[a].host, []).append(a)
    if len(hosts) > 1:
        firsts = [members[0] for members in hosts.values()]
        across = [(firsts[i], firsts[(i + 1) % len(firsts)]) for i in range(len(firsts))]
        across = across[:1] if len(firsts) == 2 else across
        within = [(m[0], m[1]) for m in hosts.values() if len(m) > 1]
        mixed = [p for pair in itertools.zip_longest(across, within) for p in pair if p]
        return mixed[:max_pairs]
    pairs = [(workers[i], workers[i + 1]) for i in range(len(workers) - 1)]
    if len(workers) > 2:
        pairs.append((workers[-1], workers[0]))
    return pairs[:max_pairs]


def human_size(nbytes: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def protocol_of(client: Any) -> str:
    address = getattr(getattr(client, "scheduler", None), "address", "") or ""
    return address.partition("://")[0] if "://" in address else "tcp"


# --- measuring (needs a cluster) -----------------------------------------------------------


class MeasureError(Exception):
    pass


def transfer_seconds(
    client: Any, src: str, dst: str, nbytes: int, gpu: bool, timeout: float
) -> float:
    """Seconds worker ``dst`` spent fetching a fresh ``nbytes`` result from worker ``src``."""
    make = client.submit(
        worker_tasks.shipped(worker_tasks.make_payload),
        nbytes,
        gpu,
        workers=[src],
        allow_other_workers=False,
        pure=False,
    )
    futures = [make]
    try:
        # wait, never result(): that would pull the whole payload to the client
        _wait(client, [make], timeout)
        if make.status == "error":
            raise make.exception()
        take = client.submit(
            worker_tasks.shipped(worker_tasks.received),
            make,
            make.key,
            workers=[dst],
            allow_other_workers=False,
            pure=False,
        )
        futures.append(take)
        size, seconds, who = take.result(timeout=timeout)
    finally:
        with contextlib.suppress(Exception):
            client.cancel(futures, force=True)
    if size != nbytes:
        raise MeasureError(f"{dst} received {size} bytes, {nbytes} were sent")
    if seconds is None:
        raise MeasureError(f"{dst} logged no transfer from {src}")
    return seconds


def _gpu_cluster(facts: Mapping[str, NodeFacts], pairs: Sequence[tuple[str, str]]) -> bool:
    members = {a for pair in pairs for a in pair}
    return bool(members) and all(
        ddp.is_gpu_worker(facts[a]) and not lacks(facts[a], ("cupy",)) for a in members
    )


def measure_transfers(
    client: Any,
    facts: Mapping[str, NodeFacts],
    *,
    sizes: Sequence[int] | None = None,
    repeats: int = 3,
    max_pairs: int = 4,
    timeout: float = 120.0,
) -> MeasurementList:
    protocol = protocol_of(client)
    pairs = pick_pairs(facts, max_pairs)
    out = MeasurementList()
    if not pairs:
        out.problems.append(Result("bench.transfer", Status.SKIP, "needs two workers", group=GROUP))
        return out
    gpu = _gpu_cluster(facts, pairs)
    sizes = tuple(sizes or (GPU_TRANSFER_SIZES if gpu else CPU_TRANSFER_SIZES))
    kind = "GPU (CuPy)" if gpu else "host (NumPy)"
    for src, dst in pairs:
        node = f"{src} -> {dst}"
        ref, basis = reference_bandwidth(facts[src], facts[dst], protocol)
        try:
            # warm-up: connection, UCX endpoints, CUDA context and pools on both ends
            transfer_seconds(client, src, dst, min(sizes), gpu, timeout)
            latency = min(
                transfer_seconds(client, src, dst, LATENCY_BYTES, gpu, timeout) for _ in range(3)
            )
            values: dict[int, float] = {}
            for nbytes in sizes:
                rates = []
                for _ in range(repeats):
                    seconds = transfer_seconds(client, src, dst, nbytes, gpu, timeout)
                    wire = seconds - latency if seconds > 2 * latency else seconds
                    rates.append(nbytes / wire / 1e9)
                values[nbytes] = statistics.median(rates)
            verdict = pair_verdict(values.values(), ref, protocol, basis)
            for nbytes, value in values.items():
                out.append(
                    Measurement(
                        name=f"transfer {protocol} {kind} {human_size(nbytes)}",
                        value=round(value, 3),
                        unit="GB/s",
                        node=node,
                        reference=ref,
                        verdict=verdict,
                    )
                )
        except Exception as exc:  # a dead or hung worker: say so, measure the other pairs
            status = Status.FAIL if isinstance(exc, MeasureError) else Status.ERROR
            out.problems.append(
                Result(
                    "bench.transfer",
                    status,
                    f"{protocol} transfer not measured: {first_line(exc)}",
                    node=node,
                    group=GROUP,
                )
            )
    return out


def measure_allreduce(
    client: Any,
    facts: Mapping[str, NodeFacts],
    *,
    sizes: Sequence[int] | None = None,
    warmup: int | None = None,
    iters: int | None = None,
    timeout: float = 120.0,
) -> MeasurementList:
    """algbw and busbw (= algbw * 2(n-1)/n, as nccl-tests defines it) of a sum all-reduce."""
    out = MeasurementList()
    plan = ddp.plan_ranks(facts)
    if isinstance(plan, str):
        out.problems.append(Result("bench.allreduce", Status.SKIP, plan, group=GROUP))
        return out
    world = len(plan.workers)
    if world < 2:
        msg = f"one {plan.backend} rank: nothing to all-reduce across"
        out.problems.append(Result("bench.allreduce", Status.SKIP, msg, group=GROUP))
        return out
    gpu = plan.backend == "nccl"
    sizes = tuple(sizes or (GPU_ALLREDUCE_SIZES if gpu else CPU_ALLREDUCE_SIZES))
    warmup = (5 if gpu else 1) if warmup is None else warmup
    iters = (20 if gpu else 3) if iters is None else iters
    ref, basis = allreduce_reference(facts, plan.workers) if gpu else (None, "")
    env = facts[plan.workers[0]].env
    node = f"{world} ranks"
    for nbytes in sizes:
        replies = _allreduce_round(client, plan, nbytes, warmup, iters, timeout, out, node)
        if replies is None:
            continue
        seconds = max(r["seconds"] for r in replies)  # the slowest rank bounds the collective
        algbw = nbytes / seconds / 1e9
        busbw = bus_bandwidth(algbw, world)
        label = f"{plan.backend} all-reduce {human_size(nbytes)}"
        out.append(Measurement(f"{label} algbw", round(algbw, 3), "GB/s", node=node))
        out.append(
            Measurement(
                f"{label} busbw",
                round(busbw, 3),
                "GB/s",
                node=node,
                reference=ref,
                verdict=allreduce_verdict(busbw, ref, basis, env),
            )
        )
    return out


def _allreduce_round(
    client: Any,
    plan: Any,
    nbytes: int,
    warmup: int,
    iters: int,
    timeout: float,
    out: MeasurementList,
    node: str,
) -> list[dict] | None:
    """Every rank's reply for one size; None (the problem added to ``out``) when it failed."""
    try:
        futs = ddp.launch(
            client, plan, worker_tasks.torch_allreduce_bench, nbytes, warmup, iters,
            timeout=timeout,
        )
        try:
            replies = _gather(client, futs, timeout)
        finally:
            with contextlib.suppress(Exception):
                client.cancel(futs, force=True)
    except Exception as exc:
        msg = f"{plan.backend} all-reduce not measured: {first_line(exc)}"
        out.problems.append(Result("bench.allreduce", Status.ERROR, msg, node=node, group=GROUP))
        return None
    want = ddp.expected_sum(len(plan.workers))
    wrong = [r["rank"] for r in replies if r["min"] != want or r["max"] != want]
    if wrong:
        msg = f"{plan.backend} all-reduce gave a wrong sum on ranks {wrong}"
        out.problems.append(Result("bench.allreduce", Status.FAIL, msg, node=node, group=GROUP))
        return None
    return replies


def run_measurements(
    client: Any,
    facts: Mapping[str, NodeFacts],
    *,
    sizes: Sequence[int] | None = None,
    allreduce_sizes: Sequence[int] | None = None,
    repeats: int = 3,
    max_pairs: int = 4,
    timeout: float = 120.0,
) -> MeasurementList:
    """Transfers between worker pairs over the cluster's protocol, then an all-reduce.

    ``sizes`` default to 64 MiB .. 4 GiB of GPU memory on GPU workers and 16, 64 MiB of host
    memory otherwise. ``timeout`` bounds each single transfer or all-reduce round. What could
    not be measured is in the returned list's ``problems``.
    """
    workers = {a: f for a, f in facts.items() if f.role not in ("client", "scheduler")}
    transfers = measure_transfers(
        client, workers, sizes=sizes, repeats=repeats, max_pairs=max_pairs, timeout=timeout
    )
    reduce = measure_allreduce(client, workers, sizes=allreduce_sizes, timeout=timeout)
    return MeasurementList([*transfers, *reduce], [*transfers.problems, *reduce.problems])


def _wait(client: Any, futures: list[Any], timeout: float) -> None:
    """Wait until every future is done (TimeoutError after ``timeout``); fetch nothing."""
    from distributed import wait

    with client.as_current():
        wait(futures, timeout=timeout)


def _gather(client: Any, futures: list[Any], timeout: float) -> list[Any]:
    """Results of every future, waiting at most ``timeout`` (TimeoutError after that)."""
    _wait(client, futures, timeout)
    return client.gather(futures, errors="raise")
