"""Which rank this process is, read from the launcher's environment: a pure function of env.

Launchers tell their ranks who they are through environment variables, each its own way:

torchrun / env   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR/PORT
                 (torchrun also TORCHELASTIC_RUN_ID and an agent store on MASTER_PORT)
horovodrun       HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK/SIZE, HOROVOD_CROSS_RANK
Open MPI         OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/NODE_RANK
MPICH / Hydra    PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS; PMIx: PMIX_RANK
srun             SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_NODEID,
                 SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE

The first that applies, in that order, wins: torchrun inside srun, or mpirun inside an sbatch
allocation, name the ranks the inner launcher made. SLURM_PROCID alone (the batch script sets
it too) is not a parallel launch: only an srun step (SLURM_STEP_ID) is.

Every value is range-checked before use, each refusal one BadInput line (exit 4): numbers are
ASCII digits (at most 10), the world has 1 to MAX_WORLD ranks, RANK, LOCAL_RANK and the node
rank lie within it, a node list or tasks-per-node list names at most MAX_WORLD entries
(expanded only after counting), MASTER_PORT is 1-65535 and MASTER_ADDR a host name or an IP
address.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcheck.errors import BadInput
from envcheck.text import shown
from envcheck.verify.across.hostlist import expand_hostlist

DEFAULT_PORT = 29500  # torch.distributed's own default
# the ports envcheck picks itself, below Linux's default ephemeral range (32768-60999):
# derived rendezvous ports (no MASTER_PORT, one per job step) and TensorFlow's gRPC ports
PORT_RANGE = (20000, 30000)
CANDIDATES = 6  # derived ports rank 0 tries in turn when one is in use on its host
MAX_WORLD = 65536  # ranks in one launch: the largest jobs run ~50,000 GPUs
_NUMBER = re.compile(r"-?[0-9]{1,10}")
_HOSTNAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")


@dataclass(frozen=True)
class LaunchInfo:
    """Who this rank is and where the group meets, as the launcher said."""

    launcher: str  # "torchrun", "env", "horovod", "openmpi", "pmi", "slurm"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int = -1  # -1: the launcher does not say
    node_rank: int = -1
    master_addr: str = ""  # "": unknown (several hosts and no MASTER_ADDR)
    master_port: int = DEFAULT_PORT
    port_source: str = ""  # "MASTER_PORT", or how it was derived
    # derived: the ports rank 0 tries in order, master_port first (() when the port was given)
    port_candidates: tuple[int, ...] = ()
    agent_store: bool = False  # torchrun's agent serves a store on MASTER_PORT: join it
    run_id: str = ""  # one launch's identity: store keys are under it
    hosts: tuple[str, ...] = ()  # srun: the step's nodes, in order
    tasks_per_node: tuple[int, ...] = ()  # srun: tasks on each of those nodes
    cyclic: bool = False  # srun --distribution=cyclic: rank r on node r % nodes

    def host_of(self, rank: int) -> str:
        """The host `rank` was launched on, where the launcher says it ("" otherwise)."""
        if not self.hosts or len(self.tasks_per_node) != len(self.hosts):
            return ""
        if self.cyclic:
            order = [i for t in range(max(self.tasks_per_node))
                     for i, n in enumerate(self.tasks_per_node) if t < n]
            return self.hosts[order[rank]] if 0 <= rank < len(order) else ""
        first = 0
        for host, n in zip(self.hosts, self.tasks_per_node):
            if first <= rank < first + n:
                return host
            first += n
        return ""


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    text = env.get(name)
    if text is None or text.strip() == "":
        if default is None:
            raise BadInput(f"{name} is not set")
        return default
    if not _NUMBER.fullmatch(text.strip()):
        raise BadInput(f"{name}={shown(text)} is not a number (ASCII digits, at most 10)")
    return int(text.strip())


def tasks_per_node(text: str) -> tuple[int, ...]:
    """Slurm's "2(x3),1" -> (2, 2, 2, 1)."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        m = re.fullmatch(r"([0-9]{1,10})(?:\(x([0-9]{1,10})\))?", part)
        if not m:
            raise BadInput(f"SLURM_STEP_TASKS_PER_NODE={shown(text)} is not Slurm's n(xk) list")
        tasks, nodes = int(m.group(1)), int(m.group(2) or 1)
        if tasks > MAX_WORLD or len(out) + nodes > MAX_WORLD:
            raise BadInput(f"SLURM_STEP_TASKS_PER_NODE={shown(text)} names more than "
                           f"{MAX_WORLD} tasks or nodes")
        out += [tasks] * nodes
    return tuple(out)


def master_addr(env: Mapping[str, str]) -> str:
    """MASTER_ADDR, stripped: a host name or an IP address ("" when unset); torch would print a
    C++ backtrace for anything else, after its connect timeout."""
    addr = env.get("MASTER_ADDR", "").strip()
    if not addr or _HOSTNAME.fullmatch(addr):
        return addr
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise BadInput(f"MASTER_ADDR={shown(addr)} is neither a host name nor an IP "
                       "address") from None
    return addr


def _derived_port(*ids: str) -> int:
    """A port every rank of one launch computes alike from the launch's ids."""
    digest = hashlib.sha256("/".join(ids).encode()).digest()
    low, high = PORT_RANGE
    return low + int.from_bytes(digest[:4], "big") % (high - low)


def derived_ports(*ids: str, count: int = CANDIDATES) -> tuple[int, ...]:
    """`count` distinct ports from the launch's ids alone, the first _derived_port(*ids) and
    each next one salted: every rank computes the same list without asking anyone."""
    ports = [_derived_port(*ids)]
    salt = 1
    while len(ports) < count:
        port = _derived_port(*ids, f"candidate {salt}")
        salt += 1
        if port not in ports:
            ports.append(port)
    return tuple(ports)


def _port(env: Mapping[str, str], *ids: str) -> tuple[int, str, tuple[int, ...]]:
    """(port, where it came from, the derived candidates: () unless derived)."""
    if env.get("MASTER_PORT", "").strip():
        port = _int(env, "MASTER_PORT")
        if not 0 < port < 65536:
            raise BadInput(f"MASTER_PORT={port} is not a TCP port")
        return port, "MASTER_PORT", ()
    known = [i for i in ids if i]
    if known:
        ports = derived_ports(*known)
        return ports[0], "derived from the launch's ids (MASTER_PORT unset)", ports
    return DEFAULT_PORT, f"default {DEFAULT_PORT} (MASTER_PORT unset)", ()


def _meeting(env: Mapping[str, str], *ids: str, addr: str = "") -> dict[str, Any]:
    """LaunchInfo's rendezvous fields: MASTER_ADDR (else `addr`), the port (_port)."""
    port, source, candidates = _port(env, *ids)
    return {"master_addr": master_addr(env) or addr, "master_port": port,
            "port_source": source, "port_candidates": candidates}


def _torchrun(env: Mapping[str, str]) -> LaunchInfo:
    agent = env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    run = env.get("TORCHELASTIC_RUN_ID", "")
    return LaunchInfo(
        launcher="torchrun" if run else "env",
        rank=_int(env, "RANK"),
        world_size=_int(env, "WORLD_SIZE"),
        local_rank=_int(env, "LOCAL_RANK", 0 if not run else None),
        local_world_size=_int(env, "LOCAL_WORLD_SIZE", -1),
        node_rank=_int(env, "GROUP_RANK", -1),
        **_meeting(env),
        agent_store=agent,
        run_id=f"{run}.{env.get('TORCHELASTIC_RESTART_COUNT', '0')}" if run else "",
    )


def _horovod(env: Mapping[str, str]) -> LaunchInfo:
    return LaunchInfo(
        launcher="horovod",
        rank=_int(env, "HOROVOD_RANK"),
        world_size=_int(env, "HOROVOD_SIZE"),
        local_rank=_int(env, "HOROVOD_LOCAL_RANK"),
        local_world_size=_int(env, "HOROVOD_LOCAL_SIZE", -1),
        node_rank=_int(env, "HOROVOD_CROSS_RANK", -1),
        **_meeting(env, env.get("HOROVOD_GLOO_RENDEZVOUS_PORT", "")),
        run_id=env.get("HOROVOD_GLOO_RENDEZVOUS_PORT", ""),
    )


def _openmpi(env: Mapping[str, str]) -> LaunchInfo:
    job = env.get("OMPI_MCA_ess_base_jobid", "") or env.get("OMPI_MCA_orte_ess_jobid", "")
    return LaunchInfo(
        launcher="openmpi",
        rank=_int(env, "OMPI_COMM_WORLD_RANK"),
        world_size=_int(env, "OMPI_COMM_WORLD_SIZE"),
        local_rank=_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0),
        local_world_size=_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", -1),
        # OMPI_COMM_WORLD_NODE_RANK is the rank among the node's processes, not the node
        **_meeting(env, job),
        run_id=job,
    )


def _pmi(env: Mapping[str, str]) -> LaunchInfo:
    name = "PMI_RANK" if "PMI_RANK" in env else "PMIX_RANK"
    if "PMI_SIZE" not in env:
        raise BadInput(f"{name} is set but not PMI_SIZE: the world size is unknown")
    return LaunchInfo(
        launcher="pmi",
        rank=_int(env, name),
        world_size=_int(env, "PMI_SIZE"),
        local_rank=_int(env, "MPI_LOCALRANKID", 0),
        local_world_size=_int(env, "MPI_LOCALNRANKS", -1),
        **_meeting(env, env.get("PMI_FD", ""), env.get("PMIX_NAMESPACE", "")),
        run_id=env.get("PMIX_NAMESPACE", ""),
    )


def _slurm(env: Mapping[str, str]) -> LaunchInfo:
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
    try:
        hosts = tuple(expand_hostlist(nodelist))
    except ValueError as e:
        raise BadInput(f"SLURM_STEP_NODELIST={shown(nodelist)}: {e}") from None
    per_node = tasks_per_node(env.get("SLURM_STEP_TASKS_PER_NODE")
                              or env.get("SLURM_TASKS_PER_NODE", ""))
    job, step = env.get("SLURM_JOB_ID", ""), env.get("SLURM_STEP_ID", "")
    node_id = _int(env, "SLURM_NODEID", -1)
    return LaunchInfo(
        launcher="slurm",
        rank=_int(env, "SLURM_PROCID"),
        world_size=_int(env, "SLURM_STEP_NUM_TASKS", _int(env, "SLURM_NTASKS", 1)),
        local_rank=_int(env, "SLURM_LOCALID", 0),
        local_world_size=per_node[node_id] if 0 <= node_id < len(per_node) else -1,
        node_rank=node_id,
        # the step's first node runs rank 0 under every distribution Slurm has
        **_meeting(env, job, step, addr=hosts[0] if hosts else ""),
        run_id=f"{job}.{step}",
        hosts=hosts,
        tasks_per_node=per_node,
        cyclic=env.get("SLURM_DISTRIBUTION", "").startswith("cyclic"),
    )


# (a variable that says this launcher started the process, the reader), first match wins
LAUNCHERS = (
    ("RANK", _torchrun),
    ("HOROVOD_RANK", _horovod),
    ("OMPI_COMM_WORLD_RANK", _openmpi),
    ("PMI_RANK", _pmi),
    ("PMIX_RANK", _pmi),
    ("SLURM_STEP_ID", _slurm),
)

NOT_LAUNCHED = (
    "not started by a parallel launcher (none of RANK, HOROVOD_RANK, OMPI_COMM_WORLD_RANK, "
    "PMI_RANK, PMIX_RANK, an srun step's SLURM_PROCID is set): run it as every task of the "
    "launch, e.g. `srun envcheck verify job`, `torchrun --nproc-per-node 4 -m envcheck verify "
    "job`, `mpirun -np 8 envcheck verify job`"
)


def launch_info(env: Mapping[str, str]) -> LaunchInfo:
    """This process's rank, world and rendezvous from its environment; BadInput if none."""
    for marker, read in LAUNCHERS:
        if marker in env and not (marker == "SLURM_STEP_ID" and "SLURM_PROCID" not in env):
            info = read(env)
            break
    else:
        raise BadInput(NOT_LAUNCHED)
    _check_ranges(info)
    if not info.master_addr and info.local_world_size == info.world_size:
        # every rank on this host: rank 0 is here
        return dataclasses.replace(info, master_addr="127.0.0.1")
    return info


def _check_ranges(info: LaunchInfo) -> None:
    """BadInput unless the world has 1..MAX_WORLD ranks and every rank number lies in it."""
    world = info.world_size
    if not 1 <= world <= MAX_WORLD:
        raise BadInput(f"{info.launcher}: world size {world} is not 1 to {MAX_WORLD}")
    if not 0 <= info.rank < world:
        raise BadInput(f"{info.launcher}: rank {info.rank} is outside the world of {world}")
    if not 0 <= info.local_rank < world:
        raise BadInput(f"{info.launcher}: local rank {info.local_rank} is outside the world "
                       f"of {world}")
    if not (info.local_world_size == -1 or 1 <= info.local_world_size <= world):
        raise BadInput(f"{info.launcher}: local world size {info.local_world_size} is not 1 "
                       f"to the world size {world}")
    if not -1 <= info.node_rank < world:
        raise BadInput(f"{info.launcher}: node rank {info.node_rank} is outside the world "
                       f"of {world}")


# Each launcher's own (rank, local rank, world size) variables, where a rank may carry several
# (torch's RANK set by a script under srun, submitit's JobEnvironment over SLURM_*).
_VIEWS = (
    ("slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"),
    ("torch", "RANK", "LOCAL_RANK", "WORLD_SIZE"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("horovod", "HOROVOD_RANK", "HOROVOD_LOCAL_RANK", "HOROVOD_SIZE"),
)


def launcher_views(env: Mapping[str, str]) -> tuple[tuple[str, int, int, int], ...]:
    """(source, rank, local rank, world size) from every launcher whose variables are set;
    submitit's JobEnvironment too inside a submitit job (SUBMITIT_EXECUTOR)."""
    out = []
    for source, *names in _VIEWS:
        values = [env.get(n, "").strip() for n in names]
        if all(v.isdigit() for v in values):
            out.append((source, int(values[0]), int(values[1]), int(values[2])))
    if env.get("SUBMITIT_EXECUTOR"):
        try:
            import submitit

            je = submitit.JobEnvironment()
            out.append(("submitit", int(je.global_rank), int(je.local_rank), int(je.num_tasks)))
        except Exception:  # noqa: BLE001 - not a submitit job after all, or another submitit
            pass
    return tuple(out)


def views_disagree(views: tuple[tuple[str, int, int, int], ...]) -> str:
    """Why the views of one rank disagree ("" when they agree). Views of different world
    sizes are nested launches (torchrun's workers under one srun task each) and not compared."""
    problems = []
    for i, (a, ra, la, wa) in enumerate(views):
        for b, rb, lb, wb in views[i + 1:]:
            if wa == wb and (ra, la) != (rb, lb):
                problems.append(f"{a} says rank {ra} (local {la}), {b} says rank {rb} (local {lb})")
    return "; ".join(problems)
