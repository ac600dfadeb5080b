"""verify job --bench: all-reduce bus bandwidth over every rank, and between each pair of hosts
(the first rank of each), judged against the link under them; the slowest pair is named.

Measured as nccl-tests does: a warm-up, then the mean time of a few all-reduces of one size on
the slowest rank, algbw = bytes / time and busbw = algbw x 2(n-1)/n, comparable to a link's
speed. NCCL on GPUs (64 MiB), gloo on CPUs (4 MiB). References are those of verify cluster
(smoke/references.py): the GPU links within a host, the slower network link of two hosts (the
speed of the interface under each rank's address) across hosts. Falling under a quarter of
the reference fails on NCCL; on gloo it warns (CPU tensors cross the kernel's TCP stack and
host memory, so a healthy link can fall short on a busy host).

The timings are taken by every rank (``measure``, which needs torch); what they mean is decided
by pure functions of the gathered facts (``bench_measurements``, ``check_bench``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from envcheck.report import Measurement, Result, Status
from envcheck.verify.job.rank import RankFacts
from envcheck.verify.smoke.references import (
    FAR_BELOW,
    allreduce_reference,
    bus_bandwidth,
    network_reference,
)

SIZES = {"nccl": 64 << 20, "gloo": 4 << 20}
ROUNDS = {"nccl": (5, 20), "gloo": (1, 5)}  # (warm-up, timed)
ALL_PAIRS_UP_TO = 8  # hosts; beyond, each host with the next one (a ring): n pairs, not n^2/2
WHOLE = "all ranks"


@dataclass(frozen=True)
class Timing:
    """One measured all-reduce: over every rank, or between two hosts (one rank each)."""

    name: str  # WHOLE, or "hostA <-> hostB"
    backend: str
    ranks: tuple[int, ...]
    nbytes: int
    seconds: float  # one all-reduce, on the slowest of its ranks

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self.name.split(" <-> ")) if self.name != WHOLE else ()

    @property
    def busbw(self) -> float:
        algbw = self.nbytes / self.seconds / 1e9 if self.seconds > 0 else 0.0
        return bus_bandwidth(algbw, len(self.ranks))


def host_pairs(ranks: Sequence[RankFacts]) -> list[tuple[str, int, int]]:
    """("hostA <-> hostB", rank on A, rank on B): the first rank of each host, every pair of
    hosts (a ring past ALL_PAIRS_UP_TO hosts)."""
    first: dict[str, int] = {}
    for r in sorted(ranks, key=lambda r: r.rank):
        first.setdefault(r.host, r.rank)
    hosts = list(first)
    if len(hosts) < 2:
        return []
    if len(hosts) <= ALL_PAIRS_UP_TO:
        pairs = [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]]
    else:
        pairs = [(hosts[i], hosts[(i + 1) % len(hosts)]) for i in range(len(hosts))]
    return [(f"{a} <-> {b}", first[a], first[b]) for a, b in pairs]


def time_allreduce(dist: Any, group: Any, backend: str) -> float:
    """Seconds per all-reduce of SIZES[backend] on this rank (a member of `group`)."""
    import torch

    warm, timed = ROUNDS[backend]
    device = "cuda" if backend == "nccl" else "cpu"
    t = torch.zeros(SIZES[backend] // 4, dtype=torch.float32, device=device)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    for _ in range(warm):
        dist.all_reduce(t, group=group)
    sync()
    t0 = time.perf_counter()
    for _ in range(timed):
        dist.all_reduce(t, group=group)
    sync()
    return (time.perf_counter() - t0) / timed


def measure(dist: Any, rank: int, ranks: Sequence[RankFacts], backend: str, whole: Any,
            new_group: Callable[[list[int]], Any],
            gather: Callable[[Any], list[Any]]) -> tuple[Timing, ...]:
    """Every rank calls this in the same order: the whole group, then each pair of hosts
    (`new_group` is collective: non-members call it too). Returns every rank's timings."""
    mine: list[tuple[str, float]] = [(WHOLE, time_allreduce(dist, whole, backend))]
    for name, a, b in host_pairs(ranks):
        group = new_group([a, b])
        if rank in (a, b):
            mine.append((name, time_allreduce(dist, group, backend)))
    slowest: dict[str, float] = {}
    members: dict[str, list[int]] = {}
    for r, timings in gather((rank, mine)):
        for name, seconds in timings:
            slowest[name] = max(slowest.get(name, 0.0), seconds)
            members.setdefault(name, []).append(r)
    return tuple(Timing(name, backend, tuple(sorted(members[name])), SIZES[backend], s)
                 for name, s in slowest.items())


def reference(t: Timing, ranks: Sequence[RankFacts], facts: Sequence[Any]) -> tuple[
        float | None, str]:
    """The link a timing is judged against: the slower network link of its two hosts; for
    every rank, the slowest host pair's link across hosts, the GPUs' links within one."""
    by_rank = {r.rank: f for r, f in zip(ranks, facts)}
    if t.hosts:
        return network_reference(by_rank[t.ranks[0]], by_rank[t.ranks[1]])
    hosts = {r.host for r in ranks}
    if len(hosts) == 1:
        if t.backend != "nccl":
            return None, "CPU tensors in one host's memory: no link to judge against"
        return allreduce_reference({str(k): f for k, f in by_rank.items()},
                                   [str(k) for k in t.ranks])
    refs = [network_reference(by_rank[a], by_rank[b]) for _, a, b in host_pairs(ranks)]
    known = [(ref, basis) for ref, basis in refs if ref is not None]
    if len(known) < len(refs):
        return None, next(basis for ref, basis in refs if ref is None)
    return min(known)


def bench_measurements(timings: Sequence[Timing], ranks: Sequence[RankFacts],
                       facts: Sequence[Any]) -> list[Measurement]:
    out = []
    for t in timings:
        ref, basis = reference(t, ranks, facts)
        label = f"{t.backend} all-reduce {t.nbytes >> 20} MiB busbw"
        out.append(Measurement(label, round(t.busbw, 3), "GB/s",
                               node=t.name if t.hosts else f"{len(t.ranks)} ranks",
                               reference=ref, verdict=_short(t, ref, basis)))
    return out


def _short(t: Timing, ref: float | None, basis: str) -> str:
    if ref is None or t.busbw >= FAR_BELOW * ref:
        return ""
    return f"{t.busbw / ref:.0%} of {ref:g} GB/s ({basis})"


def judge_bench(timings: Sequence[Timing], ranks: Sequence[RankFacts],
                facts: Sequence[Any]) -> list[Result]:
    """PASS with the numbers, or the slowest host pair (else the whole group) named when it
    falls under FAR_BELOW of its link: FAIL on NCCL, WARN on gloo."""
    if not timings:
        return []
    judged = [(t, *reference(t, ranks, facts)) for t in timings]
    short = [(t, ref, basis) for t, ref, basis in judged if _short(t, ref, basis)]
    pairs = sorted((j for j in judged if j[0].hosts), key=lambda j: j[0].busbw)
    whole = next(t for t in timings if not t.hosts)
    head = f"{whole.backend} all-reduce busbw {whole.busbw:.3g} GB/s over {len(whole.ranks)} ranks"
    if pairs:
        slow = pairs[0][0]
        head += f"; slowest host pair {slow.name}: {slow.busbw:.3g} GB/s"
    if not short:
        return [Result("job.bench", Status.PASS, head, group="job")]
    worst = min(short, key=lambda s: (not s[0].hosts, s[0].busbw))  # a pair first
    t, ref, basis = worst
    what = f"host pair {t.name}" if t.hosts else f"all {len(t.ranks)} ranks"
    others = [s[0].name for s in short if s is not worst]
    message = (f"{what}: {t.busbw:.3g} GB/s {t.backend} all-reduce busbw, {_short(t, ref, basis)}"
               + (f"; also short: {', '.join(others)}" if others else ""))
    ifname = "NCCL_SOCKET_IFNAME / NCCL_IB_HCA" if t.backend == "nccl" else "GLOO_SOCKET_IFNAME"
    fix = (f"check the link between {' and '.join(t.hosts) or 'the hosts'} (ethtool, ip -s link: "
           f"errors, MTU, a rate limit), that {ifname} picks the fast network, and the hosts' load")
    status = Status.FAIL if t.backend == "nccl" else Status.WARN
    return [Result("job.bench", status, message, node=t.name if t.hosts else "", fix=fix,
                   group="job")]
