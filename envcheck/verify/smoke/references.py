"""References for measured bandwidth, from the topology in the facts: pure, standard library
and envcheck.report only (verify job imports this without Dask).

A GPU pair is judged against its NVLink links x the per-link rate of the GPU's generation, or
its PCIe generation and width; two hosts against the slower of their network links.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from envcheck.verify.facts import Gpu, NodeFacts

FAR_BELOW = 0.25  # a number under this fraction of its reference gets a verdict

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
