"""UCX for Dask: a binding that imports and the transports a GPU node needs."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

from ..gpu.gpus import visible_gpus

CHECK = "ucx"


def check_ucx(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """UCX present when expected, with cuda_copy on GPU nodes and cuda_ipc between GPUs."""
    ucx = facts.ucx
    if not ucx.module:
        if exp.expect_ucx:
            return [
                Result(
                    CHECK,
                    Status.FAIL,
                    "UCX is expected but neither ucxx nor ucx-py is installed: Dask falls back "
                    "to TCP between workers (a 4 GiB GPU transfer took 3.2 s over TCP, 26 ms "
                    "over UCX on 2x H200)",
                    fix="install distributed-ucxx (pip: distributed-ucxx-cu12/cu13; conda: "
                    "distributed-ucxx) and start workers with --protocol ucx",
                )
            ]
        return [Result(CHECK, Status.SKIP, "not installed: UCX, and not expected (--expect-ucx)")]
    label = f"{ucx.module} {ucx.module_version}".strip() + (
        f", UCX {ucx.ucx_version}" if ucx.ucx_version else ""
    )
    if ucx.error or not ucx.transports:
        return [
            Result(
                CHECK,
                Status.WARN,
                f"{label}: transports unknown ({ucx.error or 'ucx_info listed none'})",
                fix="make ucx_info runnable (conda: ucx package; pip: libucx wheel) to check "
                "that UCX sees the GPUs",
            )
        ]
    gpus = visible_gpus(facts)
    have = set(ucx.transports)
    results = []
    if gpus and "cuda_copy" not in have:
        results.append(
            Result(
                CHECK,
                Status.FAIL,
                f"{label}: no cuda_copy transport, so UCX cannot move GPU memory "
                f"(transports: {', '.join(ucx.transports)})",
                fix="install a CUDA-enabled UCX build (conda-forge ucx with cuda-version, or "
                "the libucx-cuXX wheel) matching the driver's CUDA",
            )
        )
    if len(gpus) > 1 and "cuda_ipc" not in have:
        results.append(
            Result(
                CHECK,
                Status.WARN,
                f"{label}: no cuda_ipc transport: transfers between this node's "
                f"{len(gpus)} GPUs go through host memory",
                fix="use a CUDA-enabled UCX build; in containers share IPC (--ipc=host)",
            )
        )
    elif len(gpus) > 1 and not any(g.nvlinks_active for g in gpus):
        results.append(
            Result(
                CHECK,
                Status.WARN,
                f"{label}: cuda_ipc present but the {len(gpus)} GPUs have no active NVLink: "
                "GPU-to-GPU transfers run over PCIe",
                fix="expected on PCIe-only servers; on NVLink servers check nvidia-smi nvlink -s",
            )
        )
    if not results:
        links = max((g.nvlinks_active for g in gpus), default=0)
        extra = f", {links} NVLink links per GPU" if links else ""
        results.append(
            Result(CHECK, Status.PASS, f"{label}: transports {', '.join(ucx.transports)}{extra}")
        )
    return results
