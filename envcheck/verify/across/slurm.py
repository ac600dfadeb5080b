"""Checks that only make sense under Slurm: pure functions of the workers' facts.

Slurm says what it granted in each process's environment: SLURM_JOB_GPUS (the job's GPUs on
this node), SLURM_STEP_GPUS (the srun step's), SLURM_JOB_NODELIST, SLURMD_NODENAME. The GPU a
Dask worker computes on is the first one its CUDA_VISIBLE_DEVICES names. These checks hold
the two against each other: every worker computes on a GPU its step was granted, no two
workers of a node on the same one, no GPU a job holds left without a worker, and workers on
exactly the nodes their job was given. Where NVML answered, the GPU CUDA will pick is checked
against Slurm's number for it too.

Slurm numbers GPUs per node (gres.conf order). With task/cgroup's ConstrainDevices a task's
CUDA_VISIBLE_DEVICES is renumbered from 0 over its own GPUs; both forms are understood.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from envcheck.report import Result, Status
from envcheck.verify.across.hostlist import expand_hostlist
from envcheck.verify.facts import NodeFacts

GROUP = "slurm"
BIND_FIX = (
    "start one worker per GPU with its own GPU: srun --ntasks-per-node=G --gpus-per-task=1 "
    "dask worker ... (or srun --gres=gpu:1 per worker); `envcheck slurm script` writes it"
)


@dataclass(frozen=True)
class Words:
    """What the checked processes are called in the results, and how to bind them."""

    noun: str  # "worker", "rank"
    bind_fix: str


WORKERS = Words("worker", BIND_FIX)


def job_id(f: NodeFacts) -> str:
    return f.slurm.get("SLURM_JOB_ID", "")


def node_of(f: NodeFacts) -> str:
    """The node's name as Slurm knows it (SLURMD_NODENAME), else the short host name."""
    return f.slurm.get("SLURMD_NODENAME") or f.host.split(".")[0]


def _gpu_list(value: str | None) -> list[str]:
    return [t.strip() for t in (value or "").split(",") if t.strip().isdigit()]


def granted_gpus(f: NodeFacts) -> list[str]:
    """The GPUs Slurm gave this process: its step's, or the job's in the batch step."""
    if "SLURM_STEP_GPUS" in f.slurm:
        return _gpu_list(f.slurm["SLURM_STEP_GPUS"])
    return _gpu_list(f.slurm.get("SLURM_JOB_GPUS"))


def job_gpus(f: NodeFacts) -> list[str]:
    return _gpu_list(f.slurm.get("SLURM_JOB_GPUS")) or granted_gpus(f)


def computes_on(f: NodeFacts) -> tuple[str | None, str]:
    """(Slurm's index of the GPU this worker computes on, or None; why None)."""
    granted = granted_gpus(f)
    cvd = f.env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return None, "CUDA_VISIBLE_DEVICES is unset, so it sees every GPU of the node"
    tokens = [t.strip() for t in cvd.split(",") if t.strip()]
    if not tokens or tokens[0] in ("-1", "NoDevFiles", "none"):
        return None, f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU"
    first = tokens[0]
    if first in granted:
        return first, ""
    if first.isdigit() and int(first) < len(granted):  # renumbered by task/cgroup
        return granted[int(first)], ""
    by_uuid = {g.uuid: str(g.index) for g in f.gpus}
    if first in by_uuid and by_uuid[first] in granted:
        return by_uuid[first], ""
    shown = ",".join(granted) or "none"
    return None, (
        f"CUDA_VISIBLE_DEVICES={cvd!r} starts with GPU {first}, which Slurm did not grant "
        f"this step (SLURM_STEP_GPUS={shown})"
    )


def _looks_unbound(f: NodeFacts) -> bool:
    """Its step holds every GPU of the job and it sees them all: srun without --gres."""
    job, step = job_gpus(f), granted_gpus(f)
    cvd = [t for t in f.env.get("CUDA_VISIBLE_DEVICES", "").split(",") if t.strip()]
    return len(job) > 1 and set(step) == set(job) and len(cvd) == len(job)


def check_slurm(
    workers: Mapping[str, NodeFacts], scheduler: NodeFacts | None = None,
    words: Words = WORKERS,
) -> list[Result]:
    """Every Slurm check; nothing when no worker runs under Slurm. `words`: what the
    processes are called in the messages (Dask workers, or a job's ranks)."""
    in_slurm = {a: f for a, f in workers.items() if job_id(f)}
    if not in_slurm:
        return []
    out = _jobs(workers, in_slurm, scheduler, words)
    out += _nodes(in_slurm, words)
    out += _gpus(in_slurm, words)
    return out


def _jobs(
    workers: Mapping[str, NodeFacts],
    in_slurm: Mapping[str, NodeFacts],
    scheduler: NodeFacts | None,
    w: Words,
) -> list[Result]:
    out: list[Result] = []
    for address in sorted(set(workers) - set(in_slurm)):
        out.append(
            Result(
                "slurm.job",
                Status.FAIL,
                f"{w.noun} on {workers[address].host} runs outside Slurm (no SLURM_JOB_ID) while "
                "the others run in jobs: it holds no allocation and may use GPUs Slurm gave "
                "to someone else",
                node=address,
                fix=f"start every {w.noun} inside the allocation with srun",
                group=GROUP,
            )
        )
    jobs = sorted({job_id(f) for f in in_slurm.values()})
    where = ""
    if scheduler is not None and job_id(scheduler):
        where = f"; scheduler in job {job_id(scheduler)} on {node_of(scheduler)}"
    if not out:
        out.append(
            Result(
                "slurm.job",
                Status.PASS,
                f"{len(in_slurm)} {w.noun}s in Slurm job{'s' if len(jobs) > 1 else ''} "
                f"{', '.join(jobs)}{where}",
                group=GROUP,
            )
        )
    return out


def _nodes(in_slurm: Mapping[str, NodeFacts], w: Words) -> list[Result]:
    """Per job: the nodes its workers run on are exactly the nodes it was allocated."""
    out: list[Result] = []
    by_job: dict[str, dict[str, NodeFacts]] = {}
    for a, f in in_slurm.items():
        by_job.setdefault(job_id(f), {})[a] = f
    for job, members in sorted(by_job.items()):
        text = next(
            (f.slurm.get("SLURM_JOB_NODELIST") or f.slurm.get("SLURM_NODELIST", "")
             for f in members.values()), ""
        )
        try:
            allocated = expand_hostlist(text)
        except ValueError as e:
            out.append(Result("slurm.nodes", Status.ERROR, f"job {job}: {e}", group=GROUP))
            continue
        if not allocated:
            continue
        used: dict[str, list[str]] = {}
        for a, f in sorted(members.items()):
            used.setdefault(node_of(f), []).append(a)
        stray = [n for n in used if n not in allocated]
        idle = [n for n in allocated if n not in used]
        for n in stray:
            out.append(
                Result(
                    "slurm.nodes",
                    Status.FAIL,
                    f"job {job} runs {w.noun}s on {n}, which it was not allocated "
                    f"({text}): {', '.join(used[n])}",
                    node=n,
                    fix=f"start {w.noun}s with srun inside the job, not ssh or a fixed host list",
                    group=GROUP,
                )
            )
        if idle:
            out.append(
                Result(
                    "slurm.nodes",
                    Status.FAIL,
                    f"job {job} was allocated {len(allocated)} nodes ({text}) but "
                    f"{len(idle)} have no {w.noun}: {', '.join(idle)}",
                    node=", ".join(idle),
                    fix=f"start {w.noun}s on every node: srun --nodes=$SLURM_JOB_NUM_NODES "
                    f"--ntasks-per-node=G ...; check those nodes' {w.noun} logs",
                    group=GROUP,
                )
            )
        if not stray and not idle:
            out.append(
                Result(
                    "slurm.nodes",
                    Status.PASS,
                    f"job {job}: {w.noun}s on exactly its {len(allocated)} allocated "
                    f"node{'s' if len(allocated) > 1 else ''} ({text})",
                    group=GROUP,
                )
            )
    return out


def _gpus(in_slurm: Mapping[str, NodeFacts], w: Words) -> list[Result]:
    if not any(job_gpus(f) for f in in_slurm.values()):
        return [
            Result(
                "slurm.gpus",
                Status.SKIP,
                "no job holds a GPU (no --gres=gpu / --gpus): GPU binding checks do not apply",
                group=GROUP,
            )
        ]
    by_node: dict[str, dict[str, NodeFacts]] = {}
    for a, f in sorted(in_slurm.items()):
        by_node.setdefault(node_of(f), {})[a] = f
    out: list[Result] = []
    for node, members in sorted(by_node.items()):
        out += _node_gpus(node, members, w)
    return out


def _node_gpus(node: str, members: Mapping[str, NodeFacts], w: Words) -> list[Result]:
    out: list[Result] = []
    on: dict[str, list[str]] = {}
    for address, f in members.items():
        if not job_gpus(f):
            continue  # a CPU job's worker on a GPU node: nothing Slurm granted to compare
        gpu, why = computes_on(f)
        if gpu is None:
            out.append(
                Result(
                    "slurm.gpu-binding",
                    Status.FAIL,
                    f"{w.noun} on {node} is not bound to a GPU Slurm granted it: {why}",
                    node=address,
                    fix=w.bind_fix,
                    group=GROUP,
                )
            )
            continue
        on.setdefault(gpu, []).append(address)
        out += _nvml_agrees(address, f, gpu, w)
    for gpu, addresses in sorted(on.items()):
        if len(addresses) > 1:
            unbound = [a for a in addresses if _looks_unbound(members[a])]
            out.append(
                Result(
                    "slurm.gpu-shared",
                    Status.FAIL,
                    f"{len(addresses)} {w.noun}s on {node} compute on Slurm GPU {gpu}: "
                    + ", ".join(addresses)
                    + (
                        f"; {', '.join(unbound)} sees all of job {job_id(members[unbound[0]])}'s "
                        "GPUs: started without --gres/--gpus-per-task"
                        if unbound
                        else ""
                    ),
                    node=", ".join(addresses),
                    fix=w.bind_fix,
                    group=GROUP,
                )
            )
    held: dict[str, list[str]] = {}  # GPU -> jobs holding it on this node
    for f in members.values():
        for g in job_gpus(f):
            if job_id(f) not in held.setdefault(g, []):
                held[g].append(job_id(f))
    idle = sorted((g for g in held if g not in on), key=int)
    if idle:
        jobs = sorted({j for g in idle for j in held[g]})
        out.append(
            Result(
                "slurm.gpu-idle",
                Status.FAIL,
                f"job {', '.join(jobs)} holds GPU {', '.join(idle)} of {node} but no {w.noun} "
                f"computes on {'it' if len(idle) == 1 else 'them'} "
                f"({len(on)} of {len(held)} GPUs in use)",
                node=node,
                fix=w.bind_fix + "; or ask Slurm for only the GPUs the job uses",
                group=GROUP,
            )
        )
    if on and not idle and all(len(a) == 1 for a in on.values()) and not any(
        r.status is Status.FAIL for r in out
    ):
        out.append(
            Result(
                "slurm.gpu-binding",
                Status.PASS,
                f"{len(on)} {w.noun}s on {node}, each on its own GPU Slurm granted it "
                f"(GPU {', '.join(sorted(on, key=int))}); none shared, none idle",
                node=node,
                group=GROUP,
            )
        )
    return out


def _nvml_agrees(address: str, f: NodeFacts, gpu: str, w: Words) -> list[Result]:
    """Where NVML answered: the GPU CUDA will pick is the one Slurm numbers `gpu`."""
    if not f.gpus or not f.visible_gpu_uuids:
        return []
    index = {g.uuid: g.index for g in f.gpus}.get(f.visible_gpu_uuids[0])
    if index is None or str(index) == gpu:
        return []
    if len(f.gpus) == len(granted_gpus(f)) and len(f.gpus) < len(job_gpus(f)):
        return []  # NVML inside a device cgroup sees only the step's GPUs, renumbered
    return [
        Result(
            "slurm.gpu-binding",
            Status.WARN,
            f"Slurm numbers this {w.noun}'s GPU {gpu}, but CUDA will use NVML GPU {index} "
            f"({f.visible_gpu_uuids[0]})",
            node=address,
            fix="set CUDA_DEVICE_ORDER=PCI_BUS_ID and check gres.conf's File= order "
            "(AutoDetect=nvml numbers GPUs as NVML does)",
            group=GROUP,
        )
    ]
