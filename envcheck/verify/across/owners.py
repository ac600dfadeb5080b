"""A cluster's own process tree on each host, and what each of its processes is.

Pure, over facts. On a host, a process is the cluster's own when it is one of the processes
that reported facts (a Dask worker, a job's rank, Ray's facts task; the scheduler; the
client), or an ancestor (the ppid chain each process collects: a nanny, the `dask cuda worker`
launcher, torchrun's agent, Slurm's step daemon, the raylet) or a descendant (own_pids) of
one of them on that host. busy-gpus counts every other process on a GPU as foreign, and names
each of the cluster's own by what it is, so a report says why a GPU process was not counted.
Pids are per host: the same pid on two machines is two processes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from envcheck.verify.facts import NodeFacts, ProcessInfo

# Labels of processes that are the cluster's by their role, not a worker of it.
_SERVICES = ("client", "scheduler")

# Commands recognised above a worker or rank: (pattern over the command line, what it is).
_DASK_WORKER = ("dask cuda worker", "dask worker")
_KNOWN = (
    (re.compile(r"\bdask[ _-]cuda[ _-]worker\b|\bdask_cuda\.cli\b"), "dask cuda worker"),
    (re.compile(r"\bdask[ _-]worker\b|\bdistributed\.cli\.dask_worker\b"), "dask worker"),
    (re.compile(r"\bdask[ _-]scheduler\b|\bdistributed\.cli\.dask_scheduler\b"),
     "dask scheduler"),
    (re.compile(r"\bslurmstepd\b"), "Slurm step daemon"),
    (re.compile(r"(^|/)srun\b"), "srun"),
    (re.compile(r"\btorchrun\b|\btorch\.distributed\.(run|launch)\b"), "torchrun agent"),
    (re.compile(r"(^|/)(mpirun|mpiexec|orted|prted|hydra_pmi_proxy)\b"), "MPI launcher"),
    (re.compile(r"\bhorovodrun\b"), "horovodrun"),
    (re.compile(r"(^|/)raylet\b"), "raylet"),
    (re.compile(r"(^|/)gcs_server\b"), "Ray GCS"),
    (re.compile(r"\bdashboard/agent\.py\b"), "Ray dashboard agent"),
    (re.compile(r"\bdashboard/dashboard\.py\b"), "Ray dashboard"),
)
# Ray's own daemons are named as themselves, not as a "launcher".
_RAY = ("raylet", "Ray GCS", "Ray dashboard agent", "Ray dashboard")
# An unknown command is shown this long.
_SHOWN = 60


def cluster_processes(
    processes: Mapping[str, NodeFacts], noun: str = "worker"
) -> dict[str, dict[int, str]]:
    """host -> pid -> what it is, for every process of the cluster's tree on that host.

    processes: label -> facts of each process that reported ("client", "scheduler" or a
    worker's label); noun: what the others are ("worker", "rank", "Ray worker"). A process's
    own role wins over being above another, which wins over being below one."""
    names = {label: _name(label, f, noun) for label, f in processes.items()}
    out: dict[str, dict[int, str]] = {}
    above: dict[str, dict[int, tuple[ProcessInfo, bool, list[str]]]] = {}
    below: dict[str, dict[int, str]] = {}
    for label, f in processes.items():
        out.setdefault(f.host, {})[f.pid] = names[label]
        worker = noun == "worker" and label not in _SERVICES  # a Dask worker: a nanny above
        for depth, a in enumerate(f.ancestors):
            _, nanny, who = above.setdefault(f.host, {}).get(a.pid, (a, False, []))
            above[f.host][a.pid] = (a, nanny or (worker and depth == 0), [*who, names[label]])
        for pid in f.own_pids:
            below.setdefault(f.host, {}).setdefault(pid, f"below {names[label]}")
    for host, table in out.items():
        for pid, (info, nanny, who) in above.get(host, {}).items():
            table.setdefault(pid, f"{_ancestor(info, nanny)} above {_who(who, noun)}")
        for pid, what in below.get(host, {}).items():
            table.setdefault(pid, what)
    return out


def _name(label: str, facts: NodeFacts, noun: str) -> str:
    if label in _SERVICES and facts.role == label:
        return label
    return f"{noun} {label}"


def known_command(command: str) -> str:
    """What a recognised launcher or daemon command line is ("torchrun agent"), else ""."""
    for pattern, what in _KNOWN:
        if pattern.search(command):
            return what
    return ""


def _ancestor(info: ProcessInfo, nanny: bool) -> str:
    """What a process above a cluster process is: nanny, launcher or a Ray daemon, with its
    command (recognised, or the start of it)."""
    known = known_command(info.command)
    if known in _RAY:
        return known
    shown = known or info.command[:_SHOWN] or "?"
    if nanny and (not known or known in _DASK_WORKER):
        return f"nanny ({shown})"
    return f"launcher ({shown})"


def _who(names: list[str], noun: str) -> str:
    """'worker tcp://a:1', 'the scheduler, 4 workers': the processes something is above."""
    services = [f"the {n}" for n in _SERVICES if n in names]
    others = sorted({n for n in names if n not in _SERVICES})
    if len(others) > 2:
        others = [f"{len(others)} {noun}s"]
    return ", ".join(services + others)
