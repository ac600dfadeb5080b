"""GPU modes an admin sets: persistence, MIG, compute mode."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts, resolve_visible_devices

from .health_common import gpu_health_or_skip, unsupported_note

COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}


def check_persistence(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Persistence mode on (else every CUDA start re-initialises the GPU, seconds each)."""
    check = "persistence"
    healths, skip = gpu_health_or_skip(facts, check)
    if skip:
        return skip
    off = [h.index for h in healths if h.persistence_mode is False]
    if off:
        return [
            Result(
                check,
                Status.WARN,
                f"persistence mode off on GPU {', '.join(map(str, off))}: the driver tears the "
                "GPU down when no process holds it, so each job (each Dask worker) pays the "
                "initialisation again and ECC/clock state may be lost",
                fix="run nvidia-persistenced (systemctl enable --now nvidia-persistenced), or "
                "nvidia-smi -pm 1",
            )
        ]
    note = unsupported_note(healths, ("persistence_mode",))
    return [Result(check, Status.PASS, f"persistence mode on ({len(healths)} GPUs){note}")]


def check_mig(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """MIG off where whole GPUs are expected; MIG instances named when MIG is in use."""
    check = "mig"
    healths, skip = gpu_health_or_skip(facts, check)
    if skip:
        return skip
    on = [h.index for h in healths if h.mig_mode]
    pending = [h.index for h in healths if h.mig_mode_pending is not None
               and h.mig_mode is not None and h.mig_mode_pending != h.mig_mode]
    uses_mig = any(
        u.startswith("MIG-")
        for u in resolve_visible_devices(facts.env.get("CUDA_VISIBLE_DEVICES"), facts.gpus)[0]
    )
    out = []
    if pending:
        out.append(
            Result(
                check,
                Status.WARN,
                f"MIG mode change pending on GPU {', '.join(map(str, pending))} (applies at the "
                "next GPU reset)",
                fix="reset the GPU (nvidia-smi -r -i N) or reboot to apply it, or revert it",
            )
        )
    if not on:
        note = unsupported_note(healths, ("mig_mode",))
        return out + [Result(check, Status.PASS, f"MIG off: whole GPUs{note}")]
    where = f"MIG enabled on GPU {', '.join(map(str, on))}"
    if uses_mig:
        return out + [Result(check, Status.PASS, f"{where}; CUDA_VISIBLE_DEVICES names MIG "
                                                 "instances")]
    status = Status.FAIL if exp.expects_gpus else Status.WARN
    return out + [
        Result(
            check,
            status,
            f"{where}: a job sees those GPUs only as MIG instances (a slice each), not whole "
            "GPUs" + (", but whole GPUs are expected" if exp.expects_gpus else ""),
            fix="disable MIG (nvidia-smi -i N -mig 0, then reset the GPU), or give the job "
            "MIG instances by UUID in CUDA_VISIBLE_DEVICES (nvidia-smi -L lists them)",
        )
    ]


def check_compute_mode(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Compute mode Default; say what Exclusive_Process and Prohibited mean for Dask workers."""
    check = "compute-mode"
    healths, skip = gpu_health_or_skip(facts, check)
    if skip:
        return skip
    prohibited = [h.index for h in healths if h.compute_mode == 2]
    exclusive = [h.index for h in healths if h.compute_mode in (1, 3)]
    out = []
    if prohibited:
        out.append(
            Result(
                check,
                Status.FAIL,
                f"GPU {', '.join(map(str, prohibited))} in compute mode Prohibited: no process "
                "may create a CUDA context there, every CUDA call of a job fails",
                fix="nvidia-smi -i N -c DEFAULT (as root)",
            )
        )
    if exclusive:
        out.append(
            Result(
                check,
                Status.WARN,
                f"GPU {', '.join(map(str, exclusive))} in compute mode Exclusive_Process: one "
                "process per GPU. One Dask worker per GPU works (dask-cuda's default), but the "
                "client, a second worker or a notebook touching that GPU fails with 'all CUDA-"
                "capable devices are busy or unavailable'",
                fix="keep exactly one process per GPU (LocalCUDACluster / dask cuda worker, no "
                "CUDA in the client), or nvidia-smi -i N -c DEFAULT",
            )
        )
    if not out:
        note = unsupported_note(healths, ("compute_mode",))
        out.append(Result(check, Status.PASS, f"compute mode Default on {len(healths)} GPUs{note}"))
    return out
