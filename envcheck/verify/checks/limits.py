"""OS limits that UCX and NCCL trip over: locked memory (`ulimit -l`) and /dev/shm's size.

Under Slurm both come from the node, not the user: slurmd hands jobs the submitting shell's
limits (PropagateResourceLimits) and containers get a 64 MiB /dev/shm unless told otherwise.
"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

GIB = 2**30
SHM_NEEDED = GIB  # NCCL's shared-memory transport and UCX's posix/sysv ones, for 8 GPUs
RDMA_TRANSPORTS = ("rc", "rc_verbs", "rc_mlx5", "ud", "ud_verbs", "ud_mlx5", "dc", "dc_mlx5")


def _users(facts: NodeFacts, exp: Expectations) -> list[str]:
    out = []
    if facts.ucx.module or exp.expect_ucx:
        out.append("UCX")
    if facts.nccl_version:
        out.append("NCCL")
    return out


def _size(n: int) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / 2**20:.0f} MiB"


def check_memlock(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """`ulimit -l` is unlimited where UCX or NCCL may register (pin) memory for RDMA."""
    users = _users(facts, exp)
    if facts.memlock_bytes == -2:
        return [Result("memlock", Status.SKIP, "the memlock limit could not be read")]
    if facts.memlock_bytes == -1:
        return [Result("memlock", Status.PASS, "ulimit -l: unlimited")]
    shown = f"ulimit -l is {_size(facts.memlock_bytes)}"
    if not users:
        return [Result("memlock", Status.SKIP, f"{shown}; no UCX or NCCL here to need more")]
    rdma = sorted(set(facts.ucx.transports) & set(RDMA_TRANSPORTS))
    return [
        Result(
            "memlock",
            Status.FAIL if rdma else Status.WARN,
            f"{shown}: {' and '.join(users)} cannot pin buffers for RDMA"
            + (f" (UCX offers {', '.join(rdma)})" if rdma else " (InfiniBand, GPUDirect)"),
            fix="make it unlimited for jobs: LimitMEMLOCK=infinity in slurmd's systemd unit and "
            "PropagateResourceLimitsExcept=MEMLOCK in slurm.conf (or ulimit -l unlimited)",
        )
    ]


def check_shm(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """/dev/shm is large enough for NCCL's and UCX's shared-memory transports."""
    users = _users(facts, exp)
    if facts.shm_bytes == -2:
        return [Result("shm", Status.SKIP, "the size of /dev/shm was not collected")]
    if facts.shm_bytes < 0:
        status = Status.WARN if users else Status.SKIP
        return [
            Result(
                "shm",
                status,
                "no /dev/shm" + (f": {' and '.join(users)} fall back to slower paths" if users
                                  else ""),
                fix="mount a tmpfs on /dev/shm (containers: --ipc=host or --shm-size)",
            )
        ]
    shown = f"/dev/shm is {_size(facts.shm_bytes)}"
    if facts.shm_bytes >= SHM_NEEDED:
        return [Result("shm", Status.PASS, shown)]
    if not users:
        return [Result("shm", Status.SKIP, f"{shown}; no UCX or NCCL here to need more")]
    return [
        Result(
            "shm",
            Status.WARN,
            f"{shown}, under the {_size(SHM_NEEDED)} {' and '.join(users)} need between GPUs "
            "of a node (NCCL fails with 'unhandled system error' when it runs out)",
            fix="enlarge it: docker/podman --shm-size=8g or --ipc=host; on hosts, "
            "mount -o remount,size=50% /dev/shm",
        )
    ]
