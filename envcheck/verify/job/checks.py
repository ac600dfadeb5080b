"""Judgements over every rank's facts: pure functions (JobFacts, Expectations) -> list[Result],
in a registry run in order. Each rank is labelled by its number ("3"); results name "rank 3".

Judged with verify/across/, as verify cluster is: the per-process skew table (skew.py, with
torch, numpy and Python critical for ranks), verify node's checks folded per host (workers.py),
Slurm's GPU binding (slurm.py). Added for ranks: local ranks per host, the GPU each rank got,
torch's CUDA runtime and NCCL, a kernel on each rank's device, and the known-answer all-reduce.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, List

from envcheck.report import Result, Status, Table
from envcheck.verify.across.skew import skew_report
from envcheck.verify.across.slurm import Words, check_slurm
from envcheck.verify.across.workers import cluster_pids_by_host, node_checks_per_worker
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts
from envcheck.verify.job.bench import Timing, judge_bench
from envcheck.verify.job.horovod_job import HorovodRank, judge_horovod
from envcheck.verify.job.launch import LaunchInfo, views_disagree
from envcheck.verify.job.rank import RankFacts
from envcheck.verify.runner import run_checks

GROUP = "job"
# What ranks exchange pickled (all_gather_object, broadcast_object_list, DataLoader state)
# and what DDP needs alike on every rank.
CRITICAL = frozenset({"python", "torch", "numpy"})
BIND_FIX = (
    "give each rank its own GPU: srun --gpus-per-task=1, or torchrun --nproc-per-node=G with "
    "torch.cuda.set_device(LOCAL_RANK) and no per-rank CUDA_VISIBLE_DEVICES"
)


@dataclass(frozen=True)
class Collective:
    """One known-answer all-reduce: each rank r contributes r+1; every element must equal
    world*(world+1)/2 afterwards."""

    backend: str  # "gloo", "nccl", "horovod"
    expected: float
    got: tuple[tuple[int, float, float], ...] = ()  # (rank, min, max) of what each rank holds
    error: str = ""  # why it did not complete


@dataclass(frozen=True)
class JobFacts:
    launch: LaunchInfo  # rank 0's
    ranks: tuple[RankFacts, ...]  # those that reported, by rank
    facts: tuple[NodeFacts, ...]  # the same ranks' NodeFacts
    missing: tuple[tuple[int, str], ...] = ()  # (rank, who and why) of ranks that did not
    collectives: tuple[Collective, ...] = ()
    lock_packages: tuple[str, ...] = ()
    horovod: tuple[HorovodRank, ...] = ()  # Horovod's answers, when its step ran
    bench: tuple[Timing, ...] = ()  # --bench: the whole group's and each host pair's timing
    bench_skipped: str = ""  # --bench given, and why nothing was timed

    def labelled(self) -> dict[str, NodeFacts]:
        return {str(r.rank): f for r, f in zip(self.ranks, self.facts)}

    def by_host(self) -> dict[str, list[RankFacts]]:
        out: dict[str, list[RankFacts]] = {}
        for r in self.ranks:
            out.setdefault(r.host, []).append(r)
        return out


def _r(check: str, status: Status, message: str, node: str = "", fix: str = "") -> Result:
    return Result(check, status, message, node=node, fix=fix, group=GROUP)


def _names(ranks: list[int]) -> str:
    shown = ", ".join(str(r) for r in ranks[:8]) + (", ..." if len(ranks) > 8 else "")
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}"


def check_ranks(job: JobFacts, exp: Expectations) -> list[Result]:
    """Every rank of the world reported; a missing one is named with its host."""
    world = job.launch.world_size
    out = [
        _r("job.ranks", Status.ERROR, f"{who} never reported", node=f"rank {rank}",
           fix="look at that rank's output and its host; every rank must run verify job")
        for rank, who in job.missing
    ]
    seen = [r.rank for r in job.ranks]
    if not out:
        hosts = job.by_host()
        out.append(_r("job.ranks", Status.PASS, f"{len(seen)} of {world} ranks reported "
                      f"({job.launch.launcher}), on {len(hosts)} host(s): "
                      + ", ".join(f"{h} ({len(rs)})" for h, rs in hosts.items())))
    return out


def check_local_ranks(job: JobFacts, exp: Expectations) -> list[Result]:
    """On each host the local ranks are 0..n-1, each once (what set_device(LOCAL_RANK) needs)."""
    out = []
    for host, ranks in job.by_host().items():
        local = sorted(r.local_rank for r in ranks)
        if local == list(range(len(ranks))):
            continue
        dup = sorted({x for x in local if local.count(x) > 1})
        what = (f"local rank {', '.join(map(str, dup))} is given to several ranks" if dup
                else f"local ranks {local} are not 0..{len(ranks) - 1}")
        out.append(_r("job.local-rank", Status.FAIL,
                      f"{host}: {what} ({_names([r.rank for r in ranks])})", node=host,
                      fix="launch one task per slot and let the launcher number them "
                      "(torchrun, srun, mpirun set LOCAL_RANK / SLURM_LOCALID themselves)"))
    if not out and job.ranks:
        out.append(_r("job.local-rank", Status.PASS,
                      "local ranks are 0..n-1 on every host, each once"))
    return out


def check_skew(job: JobFacts, exp: Expectations) -> list[Result]:
    """Python, torch, numpy, torch's CUDA runtime and NCCL (and --lock) identical on every rank."""
    _, results = skew_table(job)
    out = [dataclasses.replace(r, check=r.check.replace("skew", "job.skew", 1),
                               node=", ".join(f"rank {n}" for n in r.node.split(", ") if n))
           for r in results]
    out += _stack(job, "CUDA runtime", lambda r: r.torch_cuda,
                  "kernels and libraries differ between ranks; NCCL may refuse to connect")
    out += _stack(job, "NCCL", lambda r: r.torch_nccl,
                  "NCCL ranks of different versions hang or fail to connect in collectives")
    return out


def skew_table(job: JobFacts) -> tuple[Table, list[Result]]:
    return skew_report(job.labelled(), job.lock_packages, noun="rank", critical=CRITICAL,
                       group=GROUP)


def _stack(job: JobFacts, name: str, read: Callable[[RankFacts], str], why: str) -> list[Result]:
    where: dict[str, list[int]] = {}
    for r in job.ranks:
        if read(r):
            where.setdefault(read(r), []).append(r.rank)
    if len(where) <= 1:
        return []
    ordered = sorted(where.items(), key=lambda kv: -len(kv[1]))
    odd = [rank for _, ranks in ordered[1:] for rank in ranks]
    detail = "; ".join(f"{_names(ranks)}: {v}" for v, ranks in ordered)
    return [_r(f"job.skew.{name.lower().replace(' ', '-')}", Status.FAIL,
               f"torch's {name} differs between ranks: {detail}",
               node=", ".join(f"rank {r}" for r in odd),
               fix=f"{why}: install one torch build everywhere (one environment / lock)")]


def check_node(job: JobFacts, exp: Expectations) -> list[Result]:
    """verify node's checks (the `envcheck.checks` plugins too) on every rank's facts,
    identical results folded per host."""
    from envcheck.verify.across.workers import node_checks, skipped_node_checks

    labelled = job.labelled()
    # torchrun's agent or srun's step daemon above the ranks is the job's own on a GPU
    results = node_checks_per_worker(labelled, exp, node_checks(True, exp.skip),
                                     cluster_pids_by_host(labelled, "rank"), noun="rank")
    return skipped_node_checks(exp.skip) + [
        r if not r.node.isdigit() else dataclasses.replace(r, node=f"rank {r.node}")
        for r in results]


def check_launcher_views(job: JobFacts, exp: Expectations) -> list[Result]:
    """Every launcher's variables a rank carries agree on its rank and local rank (SLURM_*,
    submitit's JobEnvironment, torch's RANK/LOCAL_RANK, OpenMPI's, Horovod's)."""
    out = []
    for r in job.ranks:
        why = views_disagree(r.launcher_views)
        if why:
            out.append(_r("job.launcher", Status.FAIL, f"rank {r.rank} on {r.host}: {why}",
                          node=f"rank {r.rank}",
                          fix="take rank and local rank from one place: a script that forms "
                          "its group from one and shards its data or picks its GPU by the "
                          "other trains on the wrong shard or device"))
    if out:
        return out
    sources = sorted({v[0] for r in job.ranks for v in r.launcher_views})
    if len(sources) < 2:
        return []
    return [_r("job.launcher", Status.PASS, f"{' and '.join(sources)} agree on every rank")]


def check_gpu_binding(job: JobFacts, exp: Expectations) -> list[Result]:
    """Every rank on exactly one GPU of its own; LOCAL_RANK agrees with the device it got."""
    if not any(r.device_count for r in job.ranks):
        return [_r("job.gpu-binding", Status.SKIP, "no rank sees a CUDA device: GPU binding "
                   "does not apply")]
    out = []
    for r in job.ranks:
        if r.device < 0:
            out.append(_r("job.gpu-binding", Status.FAIL, f"rank {r.rank} on {r.host} has no "
                          f"GPU: {r.device_note} (CUDA_VISIBLE_DEVICES="
                          f"{r.cuda_visible_devices!r})", node=f"rank {r.rank}", fix=BIND_FIX))
        elif r.device_count == 1 and r.local_rank > 0 and r.launcher in (
                "torchrun", "env", "horovod"):
            out.append(_r("job.gpu-binding.local-rank", Status.WARN,
                          f"rank {r.rank} has LOCAL_RANK {r.local_rank} but sees one device: "
                          f"torch.cuda.set_device(LOCAL_RANK) fails there (invalid device "
                          f"ordinal)", node=f"rank {r.rank}",
                          fix="use cuda:0 when each rank sees one GPU, or drop the per-rank "
                          "CUDA_VISIBLE_DEVICES and keep set_device(LOCAL_RANK)"))
    for host, ranks in job.by_host().items():
        on: dict[str, list[int]] = {}
        for r in ranks:
            if r.device >= 0:
                on.setdefault(r.device_uuid or f"cuda:{r.device}", []).append(r.rank)
        for uuid, shared in sorted(on.items()):
            if len(shared) > 1:
                out.append(_r("job.gpu-binding.shared", Status.FAIL,
                              f"{host}: {_names(shared)} compute on one GPU ({uuid})",
                              node=host, fix=BIND_FIX))
        out += _idle(job, host, ranks, set(on))
    if not any(r.status in (Status.FAIL, Status.ERROR) for r in out):
        used = sum(1 for r in job.ranks if r.device >= 0)
        out.append(_r("job.gpu-binding", Status.PASS,
                      f"{used} ranks, each on its own GPU ({len(job.by_host())} host(s))"))
    return out


def _idle(job: JobFacts, host: str, ranks: list[RankFacts], used: set[str]) -> list[Result]:
    """GPUs of the host (NVML) no rank computes on; Slurm's own check judges jobs there."""
    if job.launch.launcher == "slurm":
        return []
    facts = {f.pid: f for f in job.facts}
    gpus = {g.uuid: g.index for r in ranks for g in getattr(facts.get(r.pid), "gpus", ())}
    idle = sorted(i for u, i in gpus.items() if u not in used)
    if not gpus or not idle or not used:
        return []
    return [_r("job.gpu-binding.idle", Status.WARN,
               f"{host}: GPU {', '.join(map(str, idle))} idle: {len(ranks)} ranks on "
               f"{len(gpus)} GPUs", node=host,
               fix="one rank per GPU (torchrun --nproc-per-node=<GPUs>), or hide the others "
               "from the job with CUDA_VISIBLE_DEVICES")]


def check_kernels(job: JobFacts, exp: Expectations) -> list[Result]:
    """A kernel ran on each rank's GPU (the build carries code for its architecture)."""
    bad = [r for r in job.ranks if r.kernel_error]
    out = []
    for r in bad:
        arch = f"sm_{r.capability.replace('.', '')}" if r.capability else ""
        hint = (f"; torch {r.torch} targets {', '.join(r.arch_list)}, not {arch}"
                if arch and r.arch_list and arch not in r.arch_list else "")
        out.append(_r("job.kernel", Status.FAIL,
                      f"rank {r.rank} on {r.host}: a kernel on {r.device_name or 'its GPU'} "
                      f"failed: {r.kernel_error}{hint}", node=f"rank {r.rank}",
                      fix="install a torch build for this GPU's architecture (the CUDA "
                      "variant of torch that lists it in torch.cuda.get_arch_list())"))
    ran = [r for r in job.ranks if r.device >= 0 and not r.kernel_error]
    if ran and not bad:
        out.append(_r("job.kernel", Status.PASS, f"a kernel ran on every rank's GPU "
                      f"({len(ran)} ranks)"))
    return out


def nccl_blocker(ranks: Sequence[RankFacts]) -> str:
    """Why an NCCL all-reduce cannot run across these ranks ("" when it can).

    NCCL refuses two ranks of one communicator on one GPU ("invalid usage"): the binding
    checks already fail that, so the collective is not attempted and adds no second error.
    """
    if not ranks or any(r.device < 0 or r.kernel_error for r in ranks):
        return "not every rank has a working GPU"
    seen: dict[tuple[str, str], int] = {}
    for r in ranks:
        key = (r.host, r.device_uuid or f"cuda:{r.device}")
        if key in seen:
            return (f"ranks {seen[key]} and {r.rank} share one GPU on {r.host} "
                    "(job.gpu-binding.shared)")
        seen[key] = r.rank
    return ""


def check_allreduce(job: JobFacts, exp: Expectations) -> list[Result]:
    """gloo, NCCL and Horovod's (horovodrun, --horovod) all-reduce gave the known answer."""
    out = []
    blocker = nccl_blocker(job.ranks)
    if blocker and any(r.device >= 0 for r in job.ranks):
        out.append(_r("job.allreduce.nccl", Status.SKIP, f"nccl all-reduce not run: {blocker}"))
    for c in job.collectives:
        check = f"job.allreduce.{c.backend}"
        if c.error:
            out.append(_r(check, Status.ERROR, f"{c.backend} all-reduce did not complete: "
                          f"{c.error}", fix="see the ranks named; run again with --debug"))
            continue
        wrong = [rank for rank, lo, hi in c.got if lo != c.expected or hi != c.expected]
        if wrong:
            out.append(_r(check, Status.FAIL, f"{c.backend} all-reduce gave a wrong sum on "
                          f"{_names(wrong)} (expected {c.expected:g})",
                          node=", ".join(f"rank {w}" for w in wrong),
                          fix="a broken link or GPU: run verify node --level 2 on those hosts"))
        else:
            out.append(_r(check, Status.PASS, f"{c.backend} all-reduce over {len(c.got)} ranks "
                          f"gave the known answer {c.expected:g}"))
    return out


def check_horovod_ranks(job: JobFacts, exp: Expectations) -> list[Result]:
    """Horovod's world (hvd.size(), rank(), local_rank(), local_size()) is the launcher's."""
    return judge_horovod(job.horovod, job.ranks, job.launch)


def check_bench(job: JobFacts, exp: Expectations) -> list[Result]:
    """--bench: all-reduce bus bandwidth against the links, the slowest host pair named."""
    if job.bench_skipped:
        return [_r("job.bench", Status.SKIP, job.bench_skipped)]
    return judge_bench(job.bench, job.ranks, job.facts)


def check_slurm_binding(job: JobFacts, exp: Expectations) -> list[Result]:
    """Slurm's GPU binding per rank: SLURM_*_GPUS against CUDA_VISIBLE_DEVICES."""
    labelled = {f"rank {k}": f for k, f in job.labelled().items()}
    return [dataclasses.replace(r, check=f"job.{r.check}")  # slurm.gpus -> job.slurm.gpus
            for r in check_slurm(labelled, words=Words("rank", BIND_FIX))]


Check = Callable[[JobFacts, Expectations], List[Result]]

JOB_CHECKS: Mapping[str, Check] = {
    "job.ranks": check_ranks,
    "job.local-rank": check_local_ranks,
    "job.skew": check_skew,
    "job.gpu-binding": check_gpu_binding,
    "job.kernel": check_kernels,
    "job.slurm": check_slurm_binding,
    "job.launcher": check_launcher_views,
    "job.allreduce": check_allreduce,
    "job.horovod": check_horovod_ranks,
    "job.bench": check_bench,
    "job.node": check_node,
}


def run_job_checks(job: JobFacts, exp: Expectations) -> list[Result]:
    """Every judgement; one that raises becomes an error naming it, and the rest still run."""
    return run_checks(JOB_CHECKS, job, exp, exp.skip, group=GROUP)
