"""GPUs already holding other people's processes (the job would share memory and compute)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

from .gpus import visible_gpus
from .nvml_gap import gap_results, no_gpu_skip

# An idle GPU reports a few hundred MiB used at most (driver reservations); more than this
# with no process listed means processes NVML cannot show us (another container's pid space).
UNSEEN_USE_MIB = 1024

CHECK = "busy-gpus"
# A foreign process's command is shown this long; ours are named by what they are.
_COMMAND = 80


def check_busy(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """No process other than ours on the GPUs this job will use (--allow-busy-gpus: warn).

    Ours: this process and its descendants, and exp.known_processes (verify cluster, job and
    ray: the process tree of every worker, rank, scheduler and client on the host). Each
    GPU process is named: what it is when ours, its command and user when not."""
    gpus = visible_gpus(facts)
    if not gpus:
        skip = [no_gpu_skip(facts, CHECK) if not facts.gpus else Result(
            CHECK, Status.SKIP, "no GPU visible to this process")]
        return gap_results(facts, CHECK, "other processes on the GPUs") or skip
    ours = dict(exp.known_processes)
    ours.setdefault(facts.pid, "this process")
    for pid in facts.own_pids:
        ours.setdefault(pid, "below this process")
    foreign: list[str] = []
    own: list[str] = []
    unseen: list[str] = []
    for g in sorted(gpus, key=lambda g: g.index):  # one order for every worker's view
        for p in g.processes:
            if p.pid in ours:
                own.append(f"GPU {g.index} pid {p.pid}: {ours[p.pid]}")
                continue
            who = f"user {p.user}" if p.user else "user unknown (pid not visible here)"
            command = f" ({p.command[:_COMMAND]})" if p.command else ""
            foreign.append(f"GPU {g.index} ({g.uuid}): pid {p.pid}{command}, {who}, "
                           f"{p.used_mib} MiB")
        listed = sum(p.used_mib for p in g.processes)
        if not g.processes and g.memory_used_mib - listed > UNSEEN_USE_MIB:
            unseen.append(f"GPU {g.index}: {g.memory_used_mib} MiB used by no listed process")
    also = f" (ours: {'; '.join(own)})" if own else ""
    results = []
    if foreign:
        status = Status.WARN if exp.allow_busy_gpus else Status.FAIL
        results.append(
            Result(
                CHECK,
                status,
                "GPUs in use by other processes: " + "; ".join(foreign) + also,
                fix="wait for them, pick free GPUs with CUDA_VISIBLE_DEVICES, ask the scheduler "
                "for exclusive GPUs"
                + ("" if exp.allow_busy_gpus else ", or pass --allow-busy-gpus to only warn"),
            )
        )
    if unseen:
        results.append(
            Result(
                CHECK,
                Status.WARN,
                "; ".join(unseen) + " (processes in another container or pid namespace?)",
                fix="check nvidia-smi on the host",
            )
        )
    if not results:
        results.append(
            Result(CHECK, Status.PASS, f"no foreign process on {len(gpus)} visible GPU(s)" + also)
        )
    return results
