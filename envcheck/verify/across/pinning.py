"""GPU pinning across a cluster's workers: who uses which GPU, what is left idle, drivers.

Pure: reads the facts the workers reported. The GPU a Dask worker computes on is the first
one CUDA_VISIBLE_DEVICES leaves it (dask-cuda rotates the list per worker so that each starts
with its own), so "uses" below means "first visible".
"""

from __future__ import annotations

from collections.abc import Mapping

from envcheck.report import Result, Status
from envcheck.verify.facts import NodeFacts

GROUP = "cluster"

# Values with which people hide every GPU on purpose (a CPU worker on a GPU host).
_HIDDEN_ON_PURPOSE = ("", "-1", "none", "NoDevFiles")


def by_host(workers: Mapping[str, NodeFacts]) -> dict[str, dict[str, NodeFacts]]:
    """host -> {worker address -> facts}, hosts and workers in a stable order."""
    out: dict[str, dict[str, NodeFacts]] = {}
    for address in sorted(workers):
        out.setdefault(workers[address].host, {})[address] = workers[address]
    return dict(sorted(out.items()))


def _gpu_name(facts: NodeFacts, uuid: str) -> str:
    for g in facts.gpus:
        if g.uuid == uuid:
            return f"GPU {g.index} ({uuid})"
    return uuid


def _wants_gpu(facts: NodeFacts) -> bool:
    """A worker that should compute on a GPU: it advertises one, or its host has some and it
    was not deliberately given none."""
    if any(k.upper() == "GPU" and v > 0 for k, v in facts.resources.items()):
        return True
    cvd = facts.env.get("CUDA_VISIBLE_DEVICES")
    return bool(facts.gpus) and (cvd is None or cvd.strip() not in _HIDDEN_ON_PURPOSE)


def _granted_by_slurm(facts: NodeFacts) -> bool:
    return bool(facts.slurm.get("SLURM_STEP_GPUS") or facts.slurm.get("SLURM_JOB_GPUS"))


def check_pinning(workers: Mapping[str, NodeFacts]) -> list[Result]:
    """Each GPU worker sees a GPU, no two share one, none idle, one driver version."""
    hosts = by_host(workers)
    if not any(f.gpus for f in workers.values()):
        reasons = sorted({f.nvml_error for f in workers.values() if f.nvml_error})
        why = f" (NVML: {'; '.join(reasons)})" if reasons else ""
        msg = f"no GPU on any worker host{why}: GPU pinning checks do not apply"
        out = [Result("pinning", Status.SKIP, msg, group=GROUP)]
        # ...unless a worker claims a GPU it cannot have: that breaks annotated tasks
        # (a claim Slurm backs with a granted GPU is judged by slurm_checks against the grant)
        out += [
            _claims_without_gpu(addr, f)
            for addr, f in workers.items()
            if _wants_gpu(f) and not _granted_by_slurm(f)
        ]
        return out
    out: list[Result] = []
    for host, members in hosts.items():
        out += _visible(host, members)
        out += _shared(host, members)
        out += _unused(host, members)
    out += _drivers(hosts)
    return out


def _claims_without_gpu(address: str, facts: NodeFacts) -> Result:
    return Result(
        "pinning.visible",
        Status.FAIL,
        f"worker advertises resource GPU={facts.resources.get('GPU', 0):g} but its host "
        f"{facts.host} has no GPU NVML can see",
        node=address,
        fix="start it without --resources GPU=..., or on a GPU host with the NVIDIA driver",
        group=GROUP,
    )


def _visible(host: str, members: Mapping[str, NodeFacts]) -> list[Result]:
    out: list[Result] = []
    gpu_workers = {a: f for a, f in members.items() if _wants_gpu(f)}
    for address, f in members.items():
        if f.visible_gpu_uuids:
            continue
        cvd = f.env.get("CUDA_VISIBLE_DEVICES")
        shown = "unset" if cvd is None else repr(cvd)
        why = f.visible_devices_problem or "CUDA_VISIBLE_DEVICES leaves it none"
        if address in gpu_workers:
            out.append(
                Result(
                    "pinning.visible",
                    Status.FAIL,
                    f"worker sees none of the {len(f.gpus)} GPUs of {host} "
                    f"(CUDA_VISIBLE_DEVICES={shown}: {why})",
                    node=address,
                    fix="give each worker its own GPU: dask cuda worker / LocalCUDACluster, "
                    "or CUDA_VISIBLE_DEVICES=<index> per worker",
                    group=GROUP,
                )
            )
        elif f.gpus:
            out.append(
                Result(
                    "pinning.visible",
                    Status.WARN,
                    f"CPU-only worker on GPU host {host} (CUDA_VISIBLE_DEVICES={shown})",
                    node=address,
                    fix="unset CUDA_VISIBLE_DEVICES if it should compute on a GPU",
                    group=GROUP,
                )
            )
    if not out and gpu_workers:
        seen = f"each of {len(gpu_workers)} GPU workers on {host} sees at least one GPU"
        out.append(_passed("pinning.visible", host, seen))
    return out


def _shared(host: str, members: Mapping[str, NodeFacts]) -> list[Result]:
    first: dict[str, list[str]] = {}
    for address, f in members.items():
        if f.visible_gpu_uuids:
            first.setdefault(f.visible_gpu_uuids[0], []).append(address)
    out: list[Result] = []
    for uuid, addresses in first.items():
        if len(addresses) < 2:
            continue
        facts = members[addresses[0]]
        names = " and ".join(addresses) if len(addresses) == 2 else ", ".join(addresses)
        out.append(
            Result(
                "pinning.shared",
                Status.FAIL,
                f"workers {names} all compute on {_gpu_name(facts, uuid)} of {host}",
                node=", ".join(addresses),
                fix="one worker per GPU: start workers with dask cuda worker (it sets "
                "CUDA_VISIBLE_DEVICES per worker), or set a different first device for each",
                group=GROUP,
            )
        )
    if not out and first:
        out.append(_passed("pinning.shared", host,
                           f"{len(first)} workers on {host} each compute on a GPU of their own"))
    return out


def _passed(check: str, host: str, message: str) -> Result:
    """The one result of a check that found nothing wrong on ``host``."""
    return Result(check, Status.PASS, message, node=host, group=GROUP)


def _unused(host: str, members: Mapping[str, NodeFacts]) -> list[Result]:
    facts = next(iter(members.values()))
    if not facts.gpus:
        return []
    used = {f.visible_gpu_uuids[0] for f in members.values() if f.visible_gpu_uuids}
    idle = [g for g in facts.gpus if g.uuid not in used]
    if not idle:
        return [
            Result(
                "pinning.unused",
                Status.PASS,
                f"all {len(facts.gpus)} GPUs of {host} have a worker",
                node=host,
                group=GROUP,
            )
        ]
    listed = ", ".join(str(g.index) for g in idle)
    return [
        Result(
            "pinning.unused",
            Status.WARN,
            f"{len(idle)} of {len(facts.gpus)} GPUs of {host} have no worker (GPU {listed})",
            node=host,
            fix="start one worker per GPU (dask cuda worker, or LocalCUDACluster), or hide "
            "the spare GPUs with CUDA_VISIBLE_DEVICES if they are kept for something else",
            group=GROUP,
        )
    ]


def _drivers(hosts: Mapping[str, Mapping[str, NodeFacts]]) -> list[Result]:
    versions: dict[str, list[str]] = {}
    for host, members in hosts.items():
        driver = next((f.driver_version for f in members.values() if f.driver_version), "")
        if driver:
            versions.setdefault(driver, []).append(host)
    if not versions:
        return []
    if len(versions) == 1:
        ((driver, names),) = versions.items()
        return [
            Result(
                "pinning.driver-agreement",
                Status.PASS,
                f"NVIDIA driver {driver} on all {len(names)} GPU hosts",
                group=GROUP,
            )
        ]
    detail = "; ".join(f"{d} on {', '.join(h)}" for d, h in sorted(versions.items()))
    return [
        Result(
            "pinning.driver-agreement",
            Status.WARN,
            f"GPU hosts run different NVIDIA drivers: {detail}",
            node=", ".join(h for hs in versions.values() for h in hs),
            fix="install one driver version on every host; the oldest bounds the CUDA "
            "version every environment can use",
            group=GROUP,
        )
    ]
