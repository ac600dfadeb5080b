"""Measurements: references from topology and verdicts (pure), and real transfers/all-reduce on a
LocalCluster of worker processes (host memory, small sizes so CI stays quick)."""

from __future__ import annotations

import dataclasses

import pytest

from envcheck.verify.facts import NodeFacts
from envcheck.verify.smoke.measure import (
    allreduce_reference,
    allreduce_verdict,
    bus_bandwidth,
    network_reference,
    pair_verdict,
    pick_pairs,
    reference_bandwidth,
    transfer_verdict,
)
from tests.support.factories import (
    A100,
    H200,
    RTX3090,
    V100,
    no_driver_node,
    node,
    with_env,
    with_link,
)
from tests.support.smoke_cluster import local_cluster_fixture  # noqa: F401  (the fixture)


def gpu_worker(model: str, index: int, *, host: str = "gpu-node-1", **gpu: object) -> NodeFacts:
    """A dask-cuda style worker on a host of 8 such GPUs, whose own GPU ``index`` comes first."""
    base = node(8, model, host=host, role="worker")
    if gpu:
        base = dataclasses.replace(
            base, gpus=tuple(dataclasses.replace(g, **gpu) for g in base.gpus)
        )
    order = [index, *(i for i in range(8) if i != index)]
    return with_env(base, CUDA_VISIBLE_DEVICES=",".join(map(str, order)))


def test_h200_pair_reference_is_18_nvlink4_links():
    ref, basis = reference_bandwidth(gpu_worker(H200, 0), gpu_worker(H200, 1), "ucx")
    assert ref == 450.0
    assert basis.startswith("NVLink4 x18")


def test_a100_and_v100_references_follow_link_count():
    assert reference_bandwidth(gpu_worker(A100, 0), gpu_worker(A100, 3), "ucx")[0] == 300.0
    assert reference_bandwidth(gpu_worker(V100, 0), gpu_worker(V100, 1), "ucx")[0] == 150.0


def test_gpus_without_nvlink_are_judged_against_pcie():
    ref, basis = reference_bandwidth(gpu_worker(RTX3090, 0), gpu_worker(RTX3090, 1), "ucx")
    assert ref == pytest.approx(25.2)
    assert "PCIe gen4 x16" in basis
    gen5 = gpu_worker(H200, 0, nvlinks_active=0, pcie_gen=5)
    assert reference_bandwidth(gen5, gpu_worker(H200, 1, nvlinks_active=0, pcie_gen=5), "ucx")[
        0
    ] == pytest.approx(50.4)


def test_bridged_rtx3090_pair_uses_the_bridge_rate():
    ref, basis = reference_bandwidth(
        gpu_worker(RTX3090, 0, nvlinks_active=4), gpu_worker(RTX3090, 1, nvlinks_active=4), "ucx"
    )
    assert ref == pytest.approx(56.25)
    assert "bridge" in basis


def test_no_reference_across_hosts_for_cpu_workers_or_one_shared_gpu():
    a = gpu_worker(H200, 0)
    assert reference_bandwidth(a, gpu_worker(H200, 1, host="gpu-node-2"), "tcp")[0] is None
    cpu = no_driver_node(role="worker")
    ref, basis = reference_bandwidth(cpu, cpu, "tcp")
    assert ref is None and "host memory" in basis
    assert reference_bandwidth(a, gpu_worker(H200, 0), "ucx") == (
        None,
        "both workers use the same GPU",
    )


def cpu_worker(host: str, ip: str, interface: str = "eth0", mbps: int = 10000) -> NodeFacts:
    return with_link(no_driver_node(role="worker", host=host), ip, interface, mbps)


def test_workers_on_two_hosts_are_judged_against_their_network_link():
    a, b = cpu_worker("node-a", "10.0.0.1"), cpu_worker("node-b", "10.0.0.2")
    ref, basis = reference_bandwidth(a, b, "tcp")
    assert ref == 1.125  # 10000 Mb/s / 8000 x 0.9
    assert basis == "network eth0 10000 Mb/s <-> eth0 10000 Mb/s, ~90% of line rate"
    assert transfer_verdict(0.9, ref, "tcp", basis) == ""
    verdict = transfer_verdict(0.11, ref, "tcp", basis)
    assert verdict.startswith("10% of 1.125 GB/s (network eth0 10000 Mb/s <-> eth0 10000 Mb/s")
    assert "far below the hosts' network link" in verdict and "--interface" in verdict
    assert "UCX_NET_DEVICES" in transfer_verdict(0.11, ref, "ucx", basis)
    assert "UCX_NET_DEVICES" not in verdict
    # GPU workers too: between hosts the network is the link, not NVLink
    ga = with_link(gpu_worker(H200, 0, host="gpu-node-1"), "10.0.0.3", "ib0", 200000)
    gb = with_link(gpu_worker(H200, 0, host="gpu-node-2"), "10.0.0.4", "ib0", 200000)
    assert reference_bandwidth(ga, gb, "ucx") == (
        22.5,
        "network ib0 200000 Mb/s <-> ib0 200000 Mb/s, ~90% of line rate",
    )


def test_the_slower_link_of_two_hosts_bounds_the_reference():
    fast, slow = cpu_worker("node-a", "10.0.0.1", "ens1", 25000), cpu_worker(
        "node-b", "10.0.0.2", "eno1", 1000
    )
    for x, y in ((fast, slow), (slow, fast)):
        assert network_reference(x, y)[0] == 0.1125
    assert network_reference(fast, slow)[1].startswith("network ens1 25000 Mb/s <-> eno1 1000")
    # 40 MB/s on a 1 GbE link is 36% of it: slow, not far below; 20 MB/s is
    assert pair_verdict([0.02, 0.04], 0.1125, "tcp", network_reference(fast, slow)[1]) == ""
    assert pair_verdict([0.01, 0.02], 0.1125, "tcp", "network eno1").startswith("18% of")


def test_an_unknown_link_speed_on_either_host_gives_no_reference_and_says_why():
    known, virtio = cpu_worker("node-a", "10.0.0.1"), cpu_worker("node-b", "10.0.0.2", mbps=-1)
    for x, y in ((known, virtio), (virtio, known)):
        ref, basis = reference_bandwidth(x, y, "tcp")
        assert ref is None
        assert basis == (
            "different hosts: the facts hold no network link speed "
            "(node-b: link speed unknown (/sys/class/net/eth0/speed: -1))"
        )
    old = no_driver_node(role="worker", host="node-c")  # facts from an older collector
    assert "node-c: no interface in its facts" in reference_bandwidth(known, old, "tcp")[1]
    assert transfer_verdict(0.001, None, "tcp", basis) == ""


def test_links_do_not_change_references_within_a_host():
    a = with_link(gpu_worker(H200, 0), "10.0.0.1", "eth0", 1000)
    b = with_link(gpu_worker(H200, 1), "10.0.0.1", "eth0", 1000)
    assert reference_bandwidth(a, b, "ucx")[0] == 450.0
    cpu = cpu_worker("node-a", "10.0.0.1")
    assert reference_bandwidth(cpu, cpu, "tcp") == (
        None,
        "host memory to host memory: no link to judge against",
    )


def test_tcp_between_nvlinked_gpus_gets_the_use_ucx_verdict():
    ref, basis = reference_bandwidth(gpu_worker(H200, 0), gpu_worker(H200, 1), "tcp")
    verdict = transfer_verdict(3.2, ref, "tcp", basis)
    assert "protocol tcp between NVLinked GPUs: use UCX" in verdict
    assert verdict.startswith("1% of 450 GB/s")
    assert transfer_verdict(120.0, ref, "ucx", basis) == ""  # 27%: not far below


def test_a_pair_is_judged_by_its_best_size():
    ref, basis = reference_bandwidth(gpu_worker(H200, 0), gpu_worker(H200, 1), "ucx")
    # 64 MiB over NVLink is latency-bound (24 GB/s) while 4 GiB reaches 302 GB/s: no verdict
    assert pair_verdict([23.9, 75.7, 230.0, 302.0], ref, "ucx", basis) == ""
    assert "UCX is not using NVLink" in pair_verdict([20.0, 60.0, 100.0], ref, "ucx", basis)


def test_slow_ucx_points_at_ucx_tls():
    ref, basis = reference_bandwidth(gpu_worker(A100, 0), gpu_worker(A100, 1), "ucx")
    verdict = transfer_verdict(10.0, ref, "ucx", basis)
    assert "UCX is not using NVLink" in verdict and "cuda_ipc" in verdict
    assert transfer_verdict(10.0, None, "ucx", "no link") == ""


def test_busbw_is_algbw_times_2_n_minus_1_over_n():
    assert bus_bandwidth(100.0, 2) == 100.0
    assert bus_bandwidth(100.0, 8) == 175.0


def test_allreduce_reference_and_verdict_name_disabled_p2p():
    facts = {f"w{i}": gpu_worker(H200, i) for i in range(4)}
    ref, basis = allreduce_reference(facts, sorted(facts))
    assert ref == 450.0
    verdict = allreduce_verdict(30.0, ref, basis, {"NCCL_P2P_DISABLE": "1"})
    assert "NCCL_P2P_DISABLE is set on the workers" in verdict
    assert "fabricmanager" in allreduce_verdict(30.0, ref, basis, {})
    assert allreduce_verdict(400.0, ref, basis, {}) == ""
    spread = {**facts, "w9": gpu_worker(H200, 0, host="gpu-node-2")}
    assert allreduce_reference(spread, sorted(spread))[0] is None


def test_pairs_form_a_ring_over_gpu_workers_capped():
    facts = {f"tcp://h:{i}": gpu_worker(H200, i) for i in range(6)}
    facts["tcp://h:99"] = no_driver_node(role="worker")  # CPU worker: not paired with GPUs
    pairs = pick_pairs(facts, 4)
    assert pairs[0] == ("tcp://h:0", "tcp://h:1")
    assert len(pairs) == 4
    assert all("99" not in a + b for a, b in pairs)
    assert pick_pairs({"tcp://h:1": no_driver_node()}, 4) == []





def test_pairs_across_hosts_alternate_with_pairs_within_a_host():
    facts = {
        f"tcp://{h}:{i}": gpu_worker(H200, i, host=h)
        for h in ("gpu-a", "gpu-b", "gpu-c")
        for i in range(2)
    }
    pairs = pick_pairs(facts, 4)
    hosts = [(facts[a].host, facts[b].host) for a, b in pairs]
    assert hosts[0][0] != hosts[0][1] and hosts[1][0] == hosts[1][1]
    assert len(pairs) == 4 and len({h for pair in hosts for h in pair}) == 3
    two = {a: f for a, f in facts.items() if f.host != "gpu-c"}
    assert [(two[a].host, two[b].host) for a, b in pick_pairs(two, 4)] == [
        ("gpu-a", "gpu-b"), ("gpu-a", "gpu-a"), ("gpu-b", "gpu-b")]
