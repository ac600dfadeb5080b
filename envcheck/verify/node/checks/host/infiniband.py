"""InfiniBand / RoCE: ports ACTIVE at one rate, and GPUDirect RDMA (nvidia-peermem) loaded."""

from __future__ import annotations

from collections import Counter

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts
from envcheck.verify.node.checks.gpu.nvml_gap import no_gpu_skip


def _nothing_to_judge(facts: NodeFacts, check: str, no_port: str,
                      needs_gpus: bool = False) -> list[Result]:
    """The skip of a check with nothing to judge (no host health facts, no GPU where it
    `needs_gpus`, no RDMA port: `no_port`); [] when there is something."""
    if not facts.host_health.collected:
        return [Result(check, Status.SKIP, "no host health facts (older collector)")]
    if needs_gpus and not facts.gpus:
        return [no_gpu_skip(facts, check)]
    if not facts.host_health.ib_ports:
        return [Result(check, Status.SKIP, no_port)]
    return []


def check_infiniband(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Each HCA port ACTIVE; ports of one link layer at one rate."""
    check = "infiniband"
    hh = facts.host_health
    skip = _nothing_to_judge(facts, check, hh.ib_error or "no InfiniBand port")
    if skip:
        return skip
    down = [p for p in hh.ib_ports if p.state != "ACTIVE"]
    rates = Counter(p.rate for p in hh.ib_ports if p.state == "ACTIVE" and p.link_layer
                    == "InfiniBand")
    out = []
    if down:
        out.append(
            Result(
                check,
                Status.WARN,
                "ports not ACTIVE: " + ", ".join(
                    f"{p.device}:{p.port} {p.state or '?'} ({p.phys_state or '?'})" for p in down
                ),
                fix="ports in use must be ACTIVE (ibstat): check the cable and the switch port; "
                "INIT/ARMED means no subnet manager (start opensm or fix the fabric's SM); "
                "unused ports can be excluded with NCCL_IB_HCA",
            )
        )
    if len(rates) > 1:
        out.append(
            Result(
                check,
                Status.WARN,
                "InfiniBand ports at different rates: "
                + "; ".join(f"{n} at {r}" for r, n in rates.most_common()),
                fix="a port that trained below its peers' rate bounds NCCL's bandwidth: reseat "
                "or replace the cable, check the switch port",
            )
        )
    if not out:
        out.append(
            Result(
                check,
                Status.PASS,
                f"{len(hh.ib_ports)} ports ACTIVE: "
                + ", ".join(f"{p.device}:{p.port} {p.rate} {p.link_layer}" for p in hh.ib_ports),
            )
        )
    return out


def check_peermem(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """nvidia-peermem (or nv_peer_mem) loaded on a host with GPUs and InfiniBand/RoCE."""
    check = "peermem"
    skip = _nothing_to_judge(facts, check, "GPUDirect RDMA needs an RDMA device: none here",
                             needs_gpus=True)
    if skip:
        return skip
    loaded = [m for m in ("nvidia_peermem", "nv_peer_mem") if m in facts.host_health.modules]
    if loaded:
        return [Result(check, Status.PASS, f"{loaded[0]} loaded: GPUDirect RDMA available")]
    return [
        Result(
            check,
            Status.WARN,
            "nvidia-peermem is not loaded: NCCL and UCX cannot move GPU memory over "
            "InfiniBand directly (GPUDirect RDMA) and stage it through host memory",
            fix="modprobe nvidia-peermem (ships with the driver; load it at boot via "
            "/etc/modules-load.d), or use DMA-BUF (NCCL_DMABUF_ENABLE=1, kernel >= 5.12)",
        )
    ]
