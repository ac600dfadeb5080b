"""verify job --bench's judgements on facts and timings built here: which host pairs are
timed, the references (the slower network link of two hosts; the GPUs' links within one), the
slowest pair named when it falls short (FAIL on NCCL, WARN on gloo), and the numbers printed."""

from __future__ import annotations

import dataclasses

import pytest

from envcheck.report import Status
from envcheck.verify.job.bench import (
    SIZES,
    WHOLE,
    Timing,
    bench_measurements,
    host_pairs,
    judge_bench,
)
from envcheck.verify.job.rank import RankFacts
from tests.support.factories import node, with_link

pytestmark = pytest.mark.unit


def rank(r: int, host: str) -> RankFacts:
    return RankFacts(rank=r, world_size=4, local_rank=r % 2, local_world_size=2,
                     node_rank=r // 2, launcher="srun", host=host, pid=100 + r)


# four ranks on three hosts: sn1 has ranks 0 and 1
RANKS = (rank(0, "sn1"), rank(1, "sn1"), rank(2, "sn2"), rank(3, "sn3"))


def facts(mbps: dict[str, int]) -> tuple:
    out = []
    for i, r in enumerate(RANKS):
        f = dataclasses.replace(node(0), host=r.host)
        out.append(with_link(f, f"10.77.0.{i + 1}", "eth0", mbps[r.host]))
    return tuple(out)


def timing(name: str, ranks: tuple[int, ...], gbps: float, backend: str = "gloo") -> Timing:
    """A timing whose busbw is `gbps` GB/s."""
    n = len(ranks)
    algbw = gbps / (2 * (n - 1) / n)
    return Timing(name, backend, ranks, SIZES[backend], SIZES[backend] / (algbw * 1e9))


def test_host_pairs_are_every_pair_of_hosts_by_their_first_rank():
    assert host_pairs(RANKS) == [("sn1 <-> sn2", 0, 2), ("sn1 <-> sn3", 0, 3),
                                 ("sn2 <-> sn3", 2, 3)]
    assert host_pairs(RANKS[:2]) == []  # one host: no pair


def test_many_hosts_are_timed_as_a_ring_not_every_pair():
    many = [rank(i, f"n{i:02d}") for i in range(12)]
    pairs = host_pairs(many)
    assert len(pairs) == 12
    assert pairs[0] == ("n00 <-> n01", 0, 1) and pairs[-1] == ("n11 <-> n00", 11, 0)


def test_a_shaped_link_names_the_slowest_host_pair_and_warns_on_gloo():
    f = facts({"sn1": 10000, "sn2": 10000, "sn3": 10000})  # 1.125 GB/s each pair
    timings = (timing(WHOLE, (0, 1, 2, 3), 0.012), timing("sn1 <-> sn2", (0, 2), 0.9),
               timing("sn1 <-> sn3", (0, 3), 0.011), timing("sn2 <-> sn3", (2, 3), 0.013))
    (r,) = judge_bench(timings, RANKS, f)
    assert r.status == Status.WARN and r.node == "sn1 <-> sn3"
    assert r.message.startswith("host pair sn1 <-> sn3: 0.011 GB/s gloo all-reduce busbw, 1% of "
                                "1.125 GB/s (network eth0 10000 Mb/s <-> eth0 10000 Mb/s")
    assert r.message.endswith("also short: all ranks, sn2 <-> sn3")
    assert "GLOO_SOCKET_IFNAME" in r.fix and "sn1 and sn3" in r.fix


def test_nccl_falling_short_across_hosts_fails():
    f = facts({"sn1": 100000, "sn2": 100000, "sn3": 25000})  # 100 Gb/s, one 25 Gb/s host
    timings = (timing(WHOLE, (0, 1, 2, 3), 2.5, "nccl"),
               timing("sn1 <-> sn2", (0, 2), 10, "nccl"),
               timing("sn1 <-> sn3", (0, 3), 2.5, "nccl"),
               timing("sn2 <-> sn3", (2, 3), 0.5, "nccl"))
    (r,) = judge_bench(timings, RANKS, f)
    # sn3's own link is the reference of its pairs (2.8125 GB/s): 2.5 is fine, 0.5 is not
    assert r.status == Status.FAIL and r.node == "sn2 <-> sn3"
    assert "18% of 2.8125 GB/s (network eth0 100000 Mb/s <-> eth0 25000 Mb/s" in r.message
    assert "NCCL_SOCKET_IFNAME" in r.fix


def test_links_at_speed_pass_with_the_numbers():
    f = facts({"sn1": 10000, "sn2": 10000, "sn3": 10000})
    timings = (timing(WHOLE, (0, 1, 2, 3), 0.8), timing("sn1 <-> sn2", (0, 2), 0.9),
               timing("sn1 <-> sn3", (0, 3), 0.7), timing("sn2 <-> sn3", (2, 3), 1.0))
    (r,) = judge_bench(timings, RANKS, f)
    assert r.status == Status.PASS
    assert r.message == ("gloo all-reduce busbw 0.8 GB/s over 4 ranks; slowest host pair "
                         "sn1 <-> sn3: 0.7 GB/s")
    ms = {m.node: m for m in bench_measurements(timings, RANKS, f)}
    assert ms["4 ranks"].reference == 1.125  # the slowest host pair's link bounds the ring
    assert ms["sn1 <-> sn3"].value == 0.7 and ms["sn1 <-> sn3"].reference == 1.125
    assert all(m.verdict == "" for m in ms.values())


def test_a_link_without_a_speed_is_measured_not_judged():
    f = facts({"sn1": 10000, "sn2": -1, "sn3": 10000})  # virtio: no speed
    timings = (timing(WHOLE, (0, 1, 2, 3), 0.01), timing("sn1 <-> sn2", (0, 2), 0.01),
               timing("sn1 <-> sn3", (0, 3), 0.9), timing("sn2 <-> sn3", (2, 3), 0.9))
    (r,) = judge_bench(timings, RANKS, f)
    assert r.status == Status.PASS  # nothing to judge 0.01 against
    ms = {m.node: m for m in bench_measurements(timings, RANKS, f)}
    assert ms["sn1 <-> sn2"].reference is None and ms["4 ranks"].reference is None


def test_one_host_on_cpus_has_no_reference_and_no_bench_no_result():
    f = facts({"sn1": 10000, "sn2": 10000, "sn3": 10000})[:2]
    (r,) = judge_bench((timing(WHOLE, (0, 1), 0.2),), RANKS[:2], f)
    assert r.status == Status.PASS and r.message == "gloo all-reduce busbw 0.2 GB/s over 2 ranks"
    assert judge_bench((), RANKS, f) == []
