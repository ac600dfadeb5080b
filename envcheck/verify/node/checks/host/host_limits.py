"""Host limits UCX and NCCL run into: locked memory, open files, /dev/shm."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import HostHealth, NodeFacts

# NCCL's shared-memory transport and CUDA IPC staging put buffers in /dev/shm per pair of
# ranks on a node; Docker's default 64 MiB makes NCCL fail ("Error while creating shared
# memory segment"). 256 MiB per GPU is the floor here; NVIDIA's containers use 1 GiB+.
SHM_PER_GPU = 256 * 2**20
MIN_NOFILE = 4096  # a worker's sockets, UCX endpoints and NCCL's per-peer sockets

MiB = 2**20


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n // MiB} MiB" if n >= MiB else f"{n} B"


def _limit(n: int | None) -> str:
    return "unlimited" if n == -1 else "unknown" if n is None else _size(n)


def check_host_limits(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """memlock unlimited where RDMA is present; nofile >= 4096 on GPU/RDMA hosts; /dev/shm
    >= 256 MiB per GPU."""
    check = "host-limits"
    hh = facts.host_health
    if not hh.collected:
        return [Result(check, Status.SKIP, "no host health facts (older collector)")]
    out: list[Result] = []
    rdma = bool(hh.ib_ports)
    if hh.memlock_soft is not None and hh.memlock_soft != -1 and rdma:
        out.append(
            Result(
                check,
                Status.FAIL,
                f"locked-memory limit (ulimit -l) is {_limit(hh.memlock_soft)} on an "
                "InfiniBand/RoCE host: UCX and NCCL register (pin) communication buffers "
                "and fail or fall back to slow paths when the limit is hit",
                fix="set memlock unlimited: '* - memlock unlimited' in "
                "/etc/security/limits.conf, LimitMEMLOCK=infinity for systemd services, "
                "--ulimit memlock=-1 for containers, PropagateResourceLimits for Slurm",
            )
        )
    # Without GPUs or RDMA a machine runs no NCCL job: a low nofile there is Dask's usual
    # concern (the scheduler raises its own), not this node's health
    low = hh.nofile_soft is not None and hh.nofile_soft != -1 and hh.nofile_soft < MIN_NOFILE
    if low and (facts.gpus or rdma):
        out.append(
            Result(
                check,
                Status.WARN,
                f"open-files limit (ulimit -n) is {hh.nofile_soft} (hard "
                f"{_limit_n(hh.nofile_hard)}): Dask workers, UCX endpoints and NCCL sockets "
                "need one each per peer",
                fix=f"raise it to at least {MIN_NOFILE}: ulimit -n $(ulimit -Hn) before starting "
                "workers, or 'nofile' in /etc/security/limits.conf",
            )
        )
    n_gpus = len(facts.gpus)
    out.extend(_shm(check, hh, n_gpus))
    if not out:
        shm = _size(hh.shm_bytes) if hh.shm_bytes is not None else "?"
        out.append(
            Result(
                check,
                Status.PASS,
                f"memlock {_limit(hh.memlock_soft)}"
                + ("" if rdma else " (no RDMA device)")
                + f", nofile {_limit_n(hh.nofile_soft)}, /dev/shm {shm}"
                + (f" for {n_gpus} GPUs" if n_gpus else ""),
            )
        )
    return out


def _shm(check: str, hh: HostHealth, n_gpus: int) -> list[Result]:
    """/dev/shm readable, >= SHM_PER_GPU per GPU, and not mostly full of leftovers."""
    if hh.shm_bytes is None:
        return [
            Result(
                check,
                Status.WARN,
                f"/dev/shm unreadable: {hh.shm_error}",
                fix="mount a tmpfs on /dev/shm (NCCL and Python multiprocessing need it)",
            )
        ]
    need = SHM_PER_GPU * n_gpus
    if n_gpus and hh.shm_bytes < need:
        return [
            Result(
                check,
                Status.FAIL,
                f"/dev/shm is {_size(hh.shm_bytes)} for {n_gpus} GPUs (< {_size(need)}): "
                "NCCL's shared-memory transport fails with 'Error while creating shared "
                "memory segment' (Docker's default is 64 MiB)",
                fix=f"give it at least {_size(need)}: docker/podman --shm-size="
                f"{max(1, need // 2**30)}g or --ipc=host; mount -o remount,size=... /dev/shm",
            )
        ]
    if n_gpus and hh.shm_free_bytes is not None and hh.shm_free_bytes < need // 2:
        return [
            Result(
                check,
                Status.WARN,
                f"/dev/shm has {_size(hh.shm_free_bytes)} free of {_size(hh.shm_bytes)}: "
                "leftover segments of earlier jobs fill it",
                fix="remove the files in /dev/shm (ls -la /dev/shm) of jobs no longer running",
            )
        ]
    return []


def _limit_n(n: int | None) -> str:
    return "unlimited" if n == -1 else "unknown" if n is None else str(n)
