"""verify node's checks applied to every worker of a cluster, folded per host.

Pure. Each worker is judged on its own facts (its packages against the lock, what its
CUDA_VISIBLE_DEVICES leaves it, the GPU processes it sees). A result that every worker of a
host reports identically (the driver, glibc, "no lock given") is a fact about the host: it is
reported once with the host as node, not once per worker.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Collection, Mapping
from typing import Callable, List

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

from .owners import cluster_processes

NodeChecks = Callable[[NodeFacts, Expectations, str], List[Result]]


def node_checks(plugins: bool = True, skip: Collection[str] = ()) -> NodeChecks:
    """verify node's checks as one function; plugins (entry points) are loaded once here,
    not once per worker: a cluster has hundreds.
    Checks in `skip` do not run (the caller reports them once for the cluster)."""
    from envcheck.verify.node.checks import run_node_checks
    from envcheck.verify.runner import run_checks

    loaded, errors = _plugins() if plugins else ([], [])
    plugin_checks = {p.name: p.check for p in loaded}

    def run(facts: NodeFacts, exp: Expectations, node: str) -> list[Result]:
        out = run_node_checks(facts, exp, node, plugins=False, skip=skip, say_skipped=False)
        out += [dataclasses.replace(r, node=node) for r in errors]
        out += run_checks(plugin_checks, facts, exp, skip, group="plugins", node=node,
                          say_skipped=False)
        return out

    return run


_PLUGINS: dict[str, tuple[object, tuple[list, list]]] = {}


def _plugins() -> tuple[list, list]:
    """load_plugins(), again only when a sys.path directory changed (a distribution was
    installed or removed): the entry-point scan reads every distribution's metadata, which
    a process verifying clusters repeatedly need not do each time. Returned
    lists are the cached ones: callers only read them."""
    from envcheck.verify.facts import dirs_key
    from envcheck.verify.plugins import load_plugins

    hit = _kept_plugins()
    if hit is not None:
        return hit
    key = (dirs_key(sys.path), tuple(sys.path))
    found = load_plugins()
    if key[0] is not None and not found[1]:  # a plugin that failed is tried again next time
        _PLUGINS["plugins"] = (key, found)
    return found


def _kept_plugins() -> tuple[list, list] | None:
    from envcheck.verify.facts import dirs_key

    key = (dirs_key(sys.path), tuple(sys.path))
    hit = _PLUGINS.get("plugins")
    if key[0] is not None and hit is not None and hit[0] == key:
        return hit[1]
    return None


def kept_node_checks(plugins: bool = True, skip: Collection[str] = ()) -> NodeChecks | None:
    """node_checks(plugins, skip) when it costs nothing (no plugins, or their scan is kept),
    else None: then the caller scans while the facts round is in flight, in a thread."""
    if plugins and _kept_plugins() is None:
        return None
    return node_checks(plugins, skip)


def skipped_node_checks(skip: Collection[str]) -> list[Result]:
    """One skip result for each node check (built in, or a plugin: an id the catalog does not
    hold) that --skip names: said once for every worker, not once per worker."""
    from envcheck.verify.catalog import CATALOG
    from envcheck.verify.node.checks import BUILTIN_CHECKS
    from envcheck.verify.runner import skips

    plugins = sorted(set(skip) - {c.id for c in CATALOG})
    return skips(BUILTIN_CHECKS, skip, "node") + skips(plugins, skip, "plugins")


def cluster_pids_by_host(
    processes: Mapping[str, NodeFacts], noun: str = "worker"
) -> dict[str, dict[int, str]]:
    """host -> pid -> what it is, for the cluster's own process tree there (GPU use by them is
    not foreign): the processes that reported, and every ancestor and descendant of one of
    them on that host (across/owners.py). Per host because pids mean nothing across machines.
    """
    return cluster_processes(processes, noun)


def node_checks_per_worker(
    workers: Mapping[str, NodeFacts],
    exp: Expectations,
    run_checks: NodeChecks,
    own_pids: Mapping[str, Mapping[int, str]] = {},  # noqa: B006 - read only
    noun: str = "worker",
) -> list[Result]:
    """run_checks on each worker (node = its address), then fold what a host shares.
    own_pids: cluster_pids_by_host's table, the known processes of each worker's host."""
    per_worker: dict[str, list[Result]] = {}
    known: dict[str, tuple[tuple[int, str], ...]] = {}
    for address, facts in workers.items():
        if facts.host not in known:
            table = {**dict(exp.known_processes), **own_pids.get(facts.host, {})}
            known[facts.host] = tuple(sorted(table.items()))
        wexp = dataclasses.replace(exp, known_processes=known[facts.host])
        per_worker[address] = run_checks(facts, wexp, address)
    return fold_per_host(per_worker, {a: f.host for a, f in workers.items()}, noun)


def _key(r: Result) -> tuple[str, str, str, str, str]:
    return (r.check, r.status.value, r.message, r.fix, r.group)


def fold_per_host(
    per_worker: Mapping[str, list[Result]], host_of: Mapping[str, str], noun: str = "worker"
) -> list[Result]:
    """Results every worker of a host reports alike become one result with node=host.

    Only identical results fold (same check, status, message and fix): as soon as one
    worker differs, each keeps its own line, so nothing about any worker is lost.
    """
    hosts: dict[str, list[str]] = {}
    for address in per_worker:
        hosts.setdefault(host_of[address], []).append(address)
    out: list[Result] = []
    for host, addresses in hosts.items():
        if len(addresses) == 1:
            out.extend(per_worker[addresses[0]])
            continue
        keysets = [{_key(r) for r in per_worker[a]} for a in addresses]
        shared = set.intersection(*keysets)
        emitted: set[tuple[str, str, str, str, str]] = set()
        for r in per_worker[addresses[0]]:  # keep the checks' own order
            k = _key(r)
            if k in shared and k not in emitted:
                emitted.add(k)
                out.append(dataclasses.replace(r, node=f"{host} ({len(addresses)} {noun}s)"))
        for a in addresses:
            out.extend(r for r in per_worker[a] if _key(r) not in shared)
    return out


# Packages that carry the CUDA runtime (libcudart) an environment uses, first match wins:
# conda's cuda-cudart (CUDA 12+) and cudatoolkit (CUDA <= 11), pip's nvidia-cuda-runtime-cuXX.
_CUDART_PACKAGES = ("cuda-cudart", "cudatoolkit", "nvidia-cuda-runtime-cu12",
                    "nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13")

# What every worker of a cluster must agree on beyond the Python packages of the skew table
# (the driver is pinning's pinning.driver-agreement, per host): name -> (read it, why it matters).
STACK: dict[str, tuple[Callable[[NodeFacts], str], str]] = {
    "nccl": (lambda f: f.nccl_version, "NCCL ranks of different versions hang or fail to "
             "connect in collectives"),
    "ucx": (lambda f: f.ucx.ucx_version, "UCX peers of different versions may not agree on "
            "wire protocol and transports"),
    "cuda-runtime": (lambda f: cuda_runtime_version(f), "a CUDA runtime that differs between "
                     "workers gives different kernels, features and minimum drivers"),
}


def cuda_runtime_version(facts: NodeFacts) -> str:
    """The CUDA runtime an environment ships ('12.4.127'), from its packages; '' unknown."""
    for name in _CUDART_PACKAGES:
        v = facts.packages.get(name) or facts.python_packages.get(name)
        if v:
            return v
    return ""


def check_stack_agreement(workers: Mapping[str, NodeFacts]) -> list[Result]:
    """Same NCCL, UCX and CUDA runtime on every worker, folded per host.

    A host whose workers all agree is one entry ("host (n workers)"); a host whose workers
    differ names each worker. Values a worker does not have ("" : no GPU, no NCCL) are left
    out, so a CPU-only worker does not disagree with the GPU ones.
    """
    out: list[Result] = []
    for name, (read, why) in STACK.items():
        where: dict[str, list[str]] = {}  # version -> hosts / workers
        by_host: dict[str, dict[str, str]] = {}
        for address, f in workers.items():
            by_host.setdefault(f.host, {})[address] = read(f)
        for host, values in by_host.items():
            versions = set(values.values())
            if len(versions) == 1:
                (v,) = versions
                if v:
                    label = host if len(values) == 1 else f"{host} ({len(values)} workers)"
                    where.setdefault(v, []).append(label)
            else:
                for address, v in values.items():
                    if v:
                        where.setdefault(v, []).append(address)
        check = f"stack-agreement.{name}"
        if not where:
            continue
        if len(where) == 1:
            ((v, places),) = where.items()
            out.append(Result(check, Status.PASS, f"{name} {v} on every worker "
                              f"({', '.join(places)})", group="cluster"))
            continue
        detail = "; ".join(f"{v} on {', '.join(p)}" for v, p in sorted(where.items()))
        out.append(
            Result(
                check,
                Status.FAIL if name in ("nccl", "cuda-runtime") else Status.WARN,
                f"workers run different {name} versions: {detail}",
                node=", ".join(p for ps in where.values() for p in ps),
                fix=f"{why}: install one version everywhere (the same environment / lock on "
                "every host)",
                group="cluster",
            )
        )
    return out
