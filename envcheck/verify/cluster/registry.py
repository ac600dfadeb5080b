"""The cluster checks: pure functions (cluster facts, expectations) -> list[Result].

Each judges what one facts round gathered (ClusterFacts), across processes, with the judges of
verify/across/: membership, version skew, hosts, stack agreement, GPU pinning, Slurm. None
talks to the cluster: what submits tasks is a smoke test (verify/smoke/suite.py). verify node's
checks also run on every worker; that is verify/across/workers.py's node_checks_per_worker, not
a check here.

The id of each entry is what `--skip` and `--list-checks` name (verify/catalog.py's table, held
equal to this registry by a test, with the first paragraph of each function's docstring).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Callable, List

from envcheck.report import Result, Status, Table
from envcheck.verify.across.hosts import hosts_view, spans_hosts
from envcheck.verify.across.pinning import by_host, check_pinning
from envcheck.verify.across.processes import ClusterFacts
from envcheck.verify.across.skew import skew_report
from envcheck.verify.across.slurm import check_slurm
from envcheck.verify.across.workers import check_stack_agreement
from envcheck.verify.expectations import Expectations
from envcheck.verify.runner import run_checks

GROUP = "cluster"

ClusterCheck = Callable[[ClusterFacts, Expectations], List[Result]]


# --- skew, computed once per round: its table, its results and membership all read it -------

_SKEW_LOCK = threading.Lock()
_LAST_SKEW: list = []  # [(cluster, lock names, (table, results))]: the last round's


def _skew(cluster: ClusterFacts, exp: Expectations) -> tuple[Table, list[Result]]:
    names = tuple(p.name for p in exp.lock_packages)
    with _SKEW_LOCK:
        if _LAST_SKEW and _LAST_SKEW[0][0] is cluster and _LAST_SKEW[0][1] == names:
            return _LAST_SKEW[0][2]
    got = skew_report({**cluster.by_process(), **cluster.versions_only}, names)
    with _SKEW_LOCK:
        _LAST_SKEW[:] = [(cluster, names, got)]
    return got


def explained(cluster: ClusterFacts, exp: Expectations) -> frozenset:
    """Workers that sent only their versions and fail skew: they could not run the collector
    *because* of that skew, so their facts error is that failure, not an error of the run."""
    if not cluster.versions_only:
        return frozenset()
    _, results = _skew(cluster, exp)
    skewed = {n for r in results if r.status is Status.FAIL for n in r.node.split(", ")}
    return frozenset(a for a in cluster.versions_only if a in skewed)


def facts_errors(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """The processes that did not report (always reported: not a check one can skip)."""
    why = explained(cluster, exp)
    return [_explained(r) if r.node in why else r for r in cluster.errors]


def _explained(error: Result) -> Result:
    return dataclasses.replace(
        error,
        status=Status.FAIL,
        message=f"{error.message}; its versions differ from the client's (see skew): a worker "
        "cannot run what a client of other versions sends it",
        fix="give every process one environment (see the skew fixes)",
    )


# --- the checks -----------------------------------------------------------------------------


def check_membership(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """Every worker the scheduler lists reported its facts; the hosts they run on."""
    n = len(cluster.expected_workers)
    if cluster.scheduler is None and n == 0 and cluster.errors:
        return [Result("workers", Status.ERROR, "unknown: the scheduler did not answer the "
                       "facts round (see the facts error)", group=GROUP)]
    if n == 0:
        return [Result(
            "workers",
            Status.FAIL,
            "the scheduler has no workers",
            fix="start workers: dask worker SCHEDULER_ADDRESS (dask cuda worker on GPU hosts)",
            group=GROUP,
        )]
    versions_only = explained(cluster, exp)
    hosts = by_host(cluster.workers)
    answered = len(cluster.workers)
    if answered == n:
        status = Status.PASS
    elif answered + len(versions_only) == n:
        status = Status.FAIL  # the rest are explained by their skew
    else:
        status = Status.ERROR
    skewed = f"; {len(versions_only)} sent only versions (skewed)" if versions_only else ""
    return [Result(
        "workers",
        status,
        f"{answered} of {n} workers reported facts{skewed}, on {len(hosts)} host(s): "
        + ", ".join(f"{h} ({len(w)})" for h, w in hosts.items()),
        group=GROUP,
    )]


def check_skew(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """Client, scheduler and workers run the same Python and key package versions."""
    return list(_skew(cluster, exp)[1])


def check_hosts(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """On a cluster over several hosts: hosts that differ from the scheduler's, or went silent."""
    if not spans_hosts(cluster, cluster.versions_only):
        return []
    return hosts_view(cluster, cluster.versions_only)[1]


def check_stack(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """Same NCCL, UCX and CUDA runtime on every worker, folded per host."""
    return check_stack_agreement(cluster.workers) if cluster.workers else []


def check_gpu_pinning(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """Each GPU worker sees a GPU, no two share one, none idle, one driver version per host."""
    return check_pinning(cluster.workers) if cluster.workers else []


def check_slurm_jobs(cluster: ClusterFacts, exp: Expectations) -> list[Result]:
    """Workers under Slurm: one job, their nodes and GPUs as allocated (nothing outside Slurm)."""
    return check_slurm(cluster.workers, cluster.scheduler) if cluster.workers else []


# check id -> function, in report order; docs/verify-cluster.md lists them
CLUSTER_CHECKS: dict[str, ClusterCheck] = {
    "workers": check_membership,
    "skew": check_skew,
    "hosts": check_hosts,
    "stack-agreement": check_stack,
    "pinning": check_gpu_pinning,
    "slurm": check_slurm_jobs,
}


def cluster_tables(cluster: ClusterFacts, exp: Expectations, skip: frozenset) -> list[Table]:
    """The views that go with the checks: the skew table, and the hosts table on several hosts
    (left out with their check, when it is skipped)."""
    tables: list[Table] = []
    if "skew" not in skip:
        tables.append(_skew(cluster, exp)[0])
    if "hosts" not in skip and spans_hosts(cluster, cluster.versions_only):
        tables.append(hosts_view(cluster, cluster.versions_only)[0])
    return tables


def run_cluster_checks(
    cluster: ClusterFacts,
    exp: Expectations,
    skip: frozenset = frozenset(),
    checks: dict[str, ClusterCheck] | None = None,
) -> list[Result]:
    """Every cluster check in order, through the runner: one in `skip` is said skipped, one
    that raises becomes an error naming it."""
    return run_checks(CLUSTER_CHECKS if checks is None else checks, cluster, exp, skip,
                      group=GROUP)

