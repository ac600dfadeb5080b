"""Every check envcheck's verify verbs can run: one id each, its kind, the verbs that run it and
its description. The id is what ``--skip`` takes, what ``--list-checks`` lists, and what the
report and its JSON carry (a check may add an aspect after a dot: ``skew.python``).

A static table: reading it imports no registry. tests/test_check_registry.py holds it equal to
the registries (verify/node/checks, verify/cluster/registry.py, verify/smoke/suite.py,
verify/job/checks.py, verify/ray/checks.py). Plugin checks (entry-point group envcheck.checks)
are known only once loaded: they are read for the full listing, or for an id not in the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.errors import BadInput

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Iterable

    from envcheck.report import Report

# the verbs that run each kind: verify node's checks also run on every worker, rank and node
VERBS = {
    "node": ("node", "cluster", "job", "ray"),
    "cluster": ("cluster",),
    "smoke": ("cluster",),
    "job": ("job",),
    "ray": ("ray",),
}


@dataclass(frozen=True)
class CheckInfo:
    id: str
    kind: str  # "node", "cluster", "smoke", "job" or "ray"
    summary: str  # one line: the first paragraph of the check's docstring

    @property
    def verbs(self) -> tuple[str, ...]:
        return VERBS[self.kind]


_NODE = (
    ("driver", "NVIDIA driver present and new enough for the CUDA version the environment needs."),
    ("gpus",
     "GPU count, model and memory as expected (--expect-gpus, --expect-gpu-model, "
     "...)."),
    ("cuda-visible-devices",
     "CUDA_VISIBLE_DEVICES names existing GPUs, no duplicates, not empty when GPUs are "
     "expected."),
    ("busy-gpus",
     "No process other than ours on the GPUs this job will use (--allow-busy-gpus: warn)."),
    ("compute-capability",
     "Every visible GPU is at least the architecture the CUDA build and --min-compute-... "
     "need."),
    ("compiled-arch", "Each framework build against each visible GPU's compute capability."),
    ("gemm", "Every matrix multiply of the level 2 load; a skip when none ran."),
    ("glibc", "glibc >= the lock's __glibc (or --min-glibc)."),
    ("packages",
     "Every package of the lock (--lock) is installed at the locked version and build."),
    ("imports",
     "Every key module of the lock and every --import MODULE imports in a child process."),
    ("libraries",
     "Every --library NAME (and those the lock implies) loads with dlopen from this env."),
    ("horovod",
     "Horovod's build (horovodrun -cb): its framework extensions import beside the installed"
     " torch / TensorFlow (the versions it was built with), a controller, NCCL on GPU nodes."),
    ("tensorflow",
     "TensorFlow's CUDA build fits the driver, lists every visible GPU, and a "
     "MirroredStrategy spans them all with a known-answer cross-replica reduce (a strategy "
     "silently on one replica is the usual failure)."),
    ("ucx", "UCX present when expected, with cuda_copy on GPU nodes and cuda_ipc between GPUs."),
    ("ecc",
     "No uncorrectable ECC error since the driver loaded, no failed or pending row "
     "remap, retired pages under DCGM's limits (thresholds.py); pending page "
     "retirement warns."),
    ("xid",
     "No Xid error in the kernel log since boot (or since --since); each code "
     "explained."),
    ("pcie",
     "Link gen/width at the maximum: below it idle -> warn, below it under load -> "
     "fail."),
    ("nvlink",
     "Links down where same-model GPUs have them up -> fail; the error counters as "
     "DCGM's health watch judges them over --level 2's load window "
     "(nvlink_counters.py)."),
    ("clocks", "No clocks-event reason active other than idle/app settings/power cap/sync boost."),
    ("persistence",
     "Persistence mode on (else every CUDA start re-initialises the GPU, seconds each)."),
    ("mig", "MIG off where whole GPUs are expected; MIG instances named when MIG is in use."),
    ("compute-mode",
     "Compute mode Default; say what Exclusive_Process and Prohibited mean for Dask workers."),
    ("host-limits",
     "memlock unlimited where RDMA is present; nofile >= 4096 on GPU/RDMA hosts; /dev/shm >="
     " 256 MiB per GPU."),
    ("net-devices",
     "Each interface / HCA these variables name exists here and is up (ACTIVE for HCAs)."),
    ("infiniband", "Each HCA port ACTIVE; ports of one link layer at one rate."),
    ("peermem", "nvidia-peermem (or nv_peer_mem) loaded on a host with GPUs and InfiniBand/RoCE."),
)

_CLUSTER = (
    ("workers", "Every worker the scheduler lists reported its facts; the hosts they run on."),
    ("skew", "Client, scheduler and workers run the same Python and key package versions."),
    ("hosts",
     "On a cluster over several hosts: hosts that differ from the scheduler's, or went "
     "silent."),
    ("stack-agreement", "Same NCCL, UCX and CUDA runtime on every worker, folded per host."),
    ("pinning",
     "Each GPU worker sees a GPU, no two share one, none idle, one driver version per host."),
    ("slurm",
     "Workers under Slurm: one job, their nodes and GPUs as allocated (nothing outside "
     "Slurm)."),
)

_SMOKE = (
    ("smoke.submit", "a task on every worker returns a known sum"),
    ("smoke.resources",
     "tasks annotated with a worker resource (--resources GPU=1) run only where it is"),
    ("smoke.array", "dask.array matrix product and sum with known answers"),
    ("smoke.gpu-kernel", "a CuPy/Numba kernel on every GPU worker, checked per worker"),
    ("smoke.dask-cudf", "a dask-cudf groupby-sum checked against pandas"),
    ("smoke.xgboost", "xgboost.dask training accuracy >= 0.9 (device=cuda on GPUs)"),
    ("smoke.torch-ddp",
     "torch.distributed through the workers (NCCL on GPUs, gloo on CPUs), all-reduce"),
    ("smoke.skorch", "a skorch fit on every worker's device, accuracy >= 0.9"),
    ("smoke.dask-pytorch-ddp",
     "dask_pytorch_ddp.dispatch.run over every worker, a checked all-reduce"),
)

_JOB = (
    ("job.ranks", "Every rank of the world reported; a missing one is named with its host."),
    ("job.local-rank",
     "On each host the local ranks are 0..n-1, each once (what set_device(LOCAL_RANK) "
     "needs)."),
    ("job.skew",
     "Python, torch, numpy, torch's CUDA runtime and NCCL (and --lock) identical on every "
     "rank."),
    ("job.gpu-binding",
     "Every rank on exactly one GPU of its own; LOCAL_RANK agrees with the device it got."),
    ("job.kernel",
     "A kernel ran on each rank's GPU (the build carries code for its architecture)."),
    ("job.slurm", "Slurm's GPU binding per rank: SLURM_*_GPUS against CUDA_VISIBLE_DEVICES."),
    ("job.launcher",
     "Every launcher's variables a rank carries agree on its rank and local rank (SLURM_*, "
     "submitit's JobEnvironment, torch's RANK/LOCAL_RANK, OpenMPI's, Horovod's)."),
    ("job.allreduce",
     "gloo, NCCL and Horovod's (horovodrun, --horovod) all-reduce gave the known answer."),
    ("job.horovod",
     "Horovod's world (hvd.size(), rank(), local_rank(), local_size()) is the launcher's."),
    ("job.bench",
     "--bench: all-reduce bus bandwidth against the links, the slowest host pair named."),
    ("job.node",
     "verify node's checks (the `envcheck.checks` plugins too) on every rank's facts, "
     "identical results folded per host."),
)

_RAY = (
    ("ray.nodes", "Every node the GCS lists is alive, and as many joined as --expect-nodes says."),
    ("ray.facts", "Every alive node answered the facts task pinned to it."),
    ("ray.skew",
     "Python, Ray, numpy, torch and the key packages identical on every node and the client."),
    ("ray.gpus", "The GPUs each node advertises to Ray against the GPUs its driver lists."),
    ("ray.gpu-tasks",
     "One num_gpus=1 task per advertised GPU, all at once: each sees exactly one GPU of its "
     "node, by UUID, and no two tasks on a node get the same one."),
    ("ray.train",
     "A Ray Train TorchTrainer all-reduce gives every worker the known sum (--train)."),
    ("ray.node", "verify node's checks on every node's facts, identical results folded per host."),
)

CATALOG: tuple[CheckInfo, ...] = tuple(
    CheckInfo(check_id, kind, summary)
    for kind, rows in (("node", _NODE), ("cluster", _CLUSTER), ("smoke", _SMOKE), ("job", _JOB),
                       ("ray", _RAY))
    for check_id, summary in rows
)


def _plugins() -> list[CheckInfo]:
    from envcheck.verify.plugins import load_plugins

    loaded, _ = load_plugins()
    return [CheckInfo(p.name, "node", f"plugin {p.target}: {_doc_line(p.check)}".rstrip(": "))
            for p in loaded]


def _doc_line(fn: object) -> str:
    """A plugin's description: the first paragraph of its docstring, on one line."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())


def all_checks() -> list[CheckInfo]:
    """Every check: the table, then plugins (entry-point group envcheck.checks)."""
    return [*CATALOG, *_plugins()]


def checks_of(verb: str) -> list[CheckInfo]:
    """The checks ``verify VERB`` runs, plugins included."""
    return [c for c in all_checks() if verb in c.verbs]


def validate_skip(ids: Iterable[str]) -> frozenset:
    """The ids as a set; BadInput naming the unknown ones and listing the valid ids. Plugins
    are loaded only for an id the table does not hold."""
    wanted = {i for i in ids if i}
    missing = wanted - {c.id for c in CATALOG}
    if not missing:
        return frozenset(wanted)
    known = all_checks()
    missing -= {c.id for c in known}
    if not missing:
        return frozenset(wanted)
    raise BadInput(
        f"unknown check id {', '.join(sorted(missing))} for --skip (valid: "
        f"{', '.join(c.id for c in known)}; see --list-checks)"
    )


def list_report(verb: str) -> Report:
    """--list-checks: the checks ``verify VERB`` runs as a Report (a table; printed as plain
    columns: id, kind, description)."""
    from envcheck.report import Report, Table, columns_text

    table = Table("checks", ("ID", "KIND", "DESCRIPTION"),
                  tuple((c.id, c.kind, c.summary) for c in checks_of(verb)))
    return Report(f"envcheck verify {verb} --list-checks", tables=(table,),
                  output=columns_text(table))
