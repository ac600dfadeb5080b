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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from envcheck.report import Measurement, Result, Status
from envcheck.verify.facts import Gpu, NodeFacts
from envcheck.verify.needs import lacks
from envcheck.verify.smoke import ddp
from envcheck.verify.smoke import tasks as worker_tasks

MiB = 1 << 20
GiB = 1 << 30
GPU_TRANSFER_SIZES = (64 * MiB, 256 * MiB, 1 * GiB, 4 * GiB)
CPU_TRANSFER_SIZES = (16 * MiB, 64 * MiB)  # host memory on CI machines: keep it quick
GPU_ALLREDUCE_SIZES = (256 * MiB,)
CPU_ALLREDUCE_SIZES = (16 * MiB,)
LATENCY_BYTES = 1024
FAR_BELOW = 0.25  # a number under this fraction of its reference gets a verdict
GROUP = "bench"

# Per-link, per-direction NVLink rate in GB/s by generation. NVLink 2, 3 and 4 all run
# 25 GB/s per link per direction; the generations differ in link count (V100 6, A100 12,
# H100/H200 18). Consumer Ampere (sm_86, RTX 3090 / A6000) bridges run 4 links at 14.0625.
_NVLINK = (
    ((10, 0), 50.0, "NVLink5"),
    ((9, 0), 25.0, "NVLink4"),
    ((8, 0), 25.0, "NVLink3"),
    ((7, 0), 25.0, "NVLink2"),
    ((6, 0), 20.0, "NVLink1"),
)
# Raw PCIe bandwidth per lane per direction (GB/s) after line encoding; ~80% is practical
# (gen4 x16: 31.5 raw, ~25 practical; gen5 x16: 63 raw, ~50 practical).
_PCIE_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
_PCIE_PRACTICAL = 0.8
# Between hosts: the slower of the two workers' links (the interfaces their Dask addresses are
# on, in Mb/s) at ~90% of line rate. TCP over Ethernet with 1500-byte frames carries 1448
# payload bytes per 1538 on the wire (94%); Dask's framing and the copies at each end take a
# little more. A 10 GbE pair is judged against 1.125 GB/s, far below it under 0.28 GB/s.
_NET_PRACTICAL = 0.9


class MeasurementList(list[Measurement]):
    """The measurements, plus ``problems``: Results for what could not be measured and why."""

    def __init__(self, items: Sequence[Measurement] = (), problems: Sequence[Result] = ()):
        super().__init__(items)
        self.problems: list[Result] = list(problems)


# --- references from topology (pure) -------------------------------------------------------


def nvlink_rate(gpu: Gpu) -> tuple[float, str]:
    """(GB/s per link per direction, generation name) for this GPU's compute capability."""
    cc = tuple(gpu.compute_capability)
    if cc == (8, 6):  # GA102 boards (RTX 3090, A40, A6000): a 4-link bridge
        return 14.0625, "NVLink3 bridge"
    for floor, rate, name in _NVLINK:
        if cc >= floor:
            return rate, name
    return 0.0, ""


def pcie_practical(gpu: Gpu) -> float:
    """Practical PCIe bandwidth per direction of this GPU's link (0 when unknown)."""
    lane = _PCIE_LANE.get(gpu.pcie_gen, 0.0)
    return round(lane * gpu.pcie_width * _PCIE_PRACTICAL, 1)


def first_gpu(f: NodeFacts) -> Gpu | None:
    """The GPU a worker uses: its first visible one."""
    if not f.visible_gpu_uuids:
        return None
    for g in f.gpus:
        if g.uuid == f.visible_gpu_uuids[0]:
            return g
    return None


def _link_reference(gpus: Sequence[Gpu]) -> tuple[float | None, str]:
    """Per-direction bandwidth each GPU can put on its links (the slowest GPU bounds it)."""
    links = min(g.nvlinks_active for g in gpus)
    if links > 0:
        rate, name = nvlink_rate(gpus[0])
        if rate:
            return links * rate, f"{name} x{links} at {rate:g} GB/s per link ({gpus[0].name})"
    slow = min(gpus, key=pcie_practical)
    pcie = pcie_practical(slow)
    if pcie:
        return pcie, f"PCIe gen{slow.pcie_gen} x{slow.pcie_width} (~80% of raw)"
    return None, "the facts show neither NVLink nor the PCIe link"


def reference_bandwidth(a: NodeFacts, b: NodeFacts, protocol: str) -> tuple[float | None, str]:
    """The bandwidth (GB/s, one direction) the hardware between two workers allows, and why.

    The reference is the link, whatever the protocol: judging a TCP number against NVLink is
    what shows the user that TCP leaves the NVLink idle. ``protocol`` only shapes the basis text.
    Workers on different hosts: the network link (network_reference).
    """
    if a.host != b.host:
        return network_reference(a, b)
    ga, gb = first_gpu(a), first_gpu(b)
    if ga is None or gb is None:
        return None, "host memory to host memory: no link to judge against"
    if ga.uuid == gb.uuid:
        return None, "both workers use the same GPU"
    ref, basis = _link_reference((ga, gb))
    if ref is not None and protocol in ("tcp", "tls", "ws", "wss"):
        basis += f"; {protocol} copies through host memory"
    return ref, basis


def network_reference(a: NodeFacts, b: NodeFacts) -> tuple[float | None, str]:
    """Workers on two hosts: the slower link of the two under their Dask addresses.

    GB/s = Mb/s / 8000 x ~90% (_NET_PRACTICAL). None, with why, when either speed is unknown
    (virtual NICs report none; facts from an older collector hold none).
    """
    la, lb = a.address_link, b.address_link
    if la.speed_mbps > 0 and lb.speed_mbps > 0:
        ref = round(min(la.speed_mbps, lb.speed_mbps) / 8000 * _NET_PRACTICAL, 4)
        basis = (
            f"network {la.interface} {la.speed_mbps} Mb/s <-> {lb.interface} {lb.speed_mbps} "
            f"Mb/s, ~{_NET_PRACTICAL:.0%} of line rate"
        )
        return ref, basis
    why = [
        f"{f.host}: {f.address_link.error or 'no interface in its facts'}"
        for f in (a, b)
        if f.address_link.speed_mbps <= 0
    ]
    return None, f"different hosts: the facts hold no network link speed ({'; '.join(why)})"


def allreduce_reference(
    facts: Mapping[str, NodeFacts], ranks: Sequence[str]
) -> tuple[float | None, str]:
    """busbw reference for a GPU all-reduce: the per-GPU link bandwidth (NCCL's busbw ideal)."""
    hosts = {facts[a].host for a in ranks}
    if len(hosts) > 1:
        return None, "ranks on several hosts: the facts hold no network link speed"
    gpus = [first_gpu(facts[a]) for a in ranks]
    if any(g is None for g in gpus):
        return None, "not every rank has a GPU"
    return _link_reference([g for g in gpus if g is not None])


def transfer_verdict(value: float, ref: float | None, protocol: str, basis: str) -> str:
    """Empty when fine; else how far below the reference and the fix."""
    if ref is None or value >= FAR_BELOW * ref:
        return ""
    head = f"{value / ref:.0%} of {ref:g} GB/s ({basis.split(';')[0]})"
    nvlink = basis.startswith("NVLink")
    if basis.startswith("network "):
        fix = (
            "far below the hosts' network link: check that the workers' addresses are on the "
            "fast network (dask worker --interface), its MTU and path, and the hosts' CPU load"
        )
        if protocol.startswith("ucx"):
            fix += "; UCX_NET_DEVICES and UCX_TLS (rc/dc on InfiniBand and RoCE)"
    elif protocol in ("tcp", "tls", "ws", "wss"):
        if nvlink:
            fix = f"protocol {protocol} between NVLinked GPUs: use UCX (protocol='ucx')"
        else:
            fix = f"protocol {protocol} copies GPU data through host memory: use UCX"
    elif protocol.startswith("ucx"):
        link = "NVLink" if nvlink else "PCIe peer-to-peer"
        fix = (
            f"UCX is not using {link}: include cuda_ipc and cuda_copy in UCX_TLS "
            "(or leave UCX_TLS unset) and start workers with dask-cuda's UCX settings"
        )
    else:
        fix = "far below what the link allows"
    return f"{head}: {fix}"


def pair_verdict(values: Iterable[float], ref: float | None, protocol: str, basis: str) -> str:
    """One verdict for a pair, from its best size: small transfers are latency-bound on any
    link, so only a pair whose best is far below the link is judged (on every size)."""
    return transfer_verdict(max(values), ref, protocol, basis)


def allreduce_verdict(busbw: float, ref: float | None, basis: str, env: Mapping[str, str]) -> str:
    if ref is None or busbw >= FAR_BELOW * ref:
        return ""
    head = f"{busbw / ref:.0%} of {ref:g} GB/s ({basis})"
    off = [k for k in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE") if env.get(k, "0") not in ("", "0")]
    if off:
        return f"{head}: {', '.join(off)} is set on the workers: unset it"
    return (
        f"{head}: NCCL is not using the GPU links: check NCCL_P2P_LEVEL, NCCL_DEBUG=INFO "
        "(transport chosen) and, on NVSwitch systems, that nvidia-fabricmanager runs"
    )


def bus_bandwidth(algbw: float, world: int) -> float:
    """nccl-tests' busbw for all-reduce: algbw * 2(n-1)/n, comparable to the link's speed."""
    return algbw * 2 * (world - 1) / world


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
                    f"{protocol} transfer not measured: {_first_line(exc)}",
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
    want = ddp.expected_sum(world)
    node = f"{world} ranks"
    for nbytes in sizes:
        try:
            futs = ddp.launch(
                client,
                plan,
                worker_tasks.torch_allreduce_bench,
                nbytes,
                warmup,
                iters,
                timeout=timeout,
            )
            try:
                replies = _gather(client, futs, timeout)
            finally:
                with contextlib.suppress(Exception):
                    client.cancel(futs, force=True)
        except Exception as exc:
            out.problems.append(
                Result(
                    "bench.allreduce",
                    Status.ERROR,
                    f"{plan.backend} all-reduce not measured: {_first_line(exc)}",
                    node=node,
                    group=GROUP,
                )
            )
            continue
        wrong = [r["rank"] for r in replies if r["min"] != want or r["max"] != want]
        if wrong:
            out.problems.append(
                Result(
                    "bench.allreduce",
                    Status.FAIL,
                    f"{plan.backend} all-reduce gave a wrong sum on ranks {wrong}",
                    node=node,
                    group=GROUP,
                )
            )
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


def _first_line(exc: BaseException, limit: int = 300) -> str:
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text[:limit]
