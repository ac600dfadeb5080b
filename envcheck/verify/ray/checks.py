"""Judgements over a Ray cluster's facts: pure functions (RayFacts, RayExpect) -> list[Result],
in a registry run in order (``--skip`` and ``--list-checks`` read it).

Judged with verify/across/, as verify cluster is: the per-process skew table (skew.py; Python,
Ray, numpy and torch critical: Ray pickles objects between nodes) and verify node's checks
folded per host (workers.py). Added for Ray: nodes alive and counted, the GPUs each node
advertises against the GPUs its driver lists, the GPU each ``num_gpus=1`` task got, and the
Ray Train all-reduce.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from envcheck.report import Result, Status, Table
from envcheck.verify.across.skew import TRACKED, skew_report
from envcheck.verify.across.workers import cluster_pids_by_host, node_checks_per_worker
from envcheck.verify.ray.model import RayExpect, RayFacts
from envcheck.verify.runner import run_checks

GROUP = "ray"
# What Ray pickles between nodes (task arguments, results, objects) and what Ray Train needs
# alike everywhere: a difference fails, any other package's warns.
CRITICAL = frozenset({"python", "ray", "numpy", "torch", "cloudpickle"})
TRACKED_RAY = ("python", "ray", *(p for p in TRACKED if p != "python"))
GPU_FIX = (
    "start the node with --num-gpus equal to the GPUs its driver lists (or leave --num-gpus "
    "out: Ray counts them itself), and check CUDA_VISIBLE_DEVICES in the environment of "
    "`ray start`"
)


def _r(check: str, status: Status, message: str, node: str = "", fix: str = "") -> Result:
    return Result(check, status, message, node=node, fix=fix, group=GROUP)


def check_nodes(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """Every node the GCS lists is alive, and as many joined as --expect-nodes says."""
    alive = [n for n in ray.nodes if n.alive]
    out = [
        _r("ray.nodes", Status.FAIL, f"node {n.label} at {n.ip} is dead"
           + (f": {n.death}" if n.death else ""), node=n.label,
           fix="restart `ray start --address ...` on that host, or remove it from the job")
        for n in ray.nodes if not n.alive
    ]
    if exp.nodes is not None and len(alive) != exp.nodes:
        short = exp.nodes - len(alive)
        what = (f"{short} node{'s' if short > 1 else ''} never joined" if short > 0
                else f"{-short} more than expected")
        out.append(_r("ray.nodes", Status.FAIL,
                      f"{len(alive)} alive node(s), {exp.nodes} expected: {what}",
                      fix="look at `ray start --address` on the missing hosts: a node of "
                      "another Ray or Python version is refused at join"))
    if not out:
        out.append(_r("ray.nodes", Status.PASS, f"{len(alive)} node(s) alive"))
    return out


def skew_table(ray: RayFacts, lock_packages: tuple[str, ...] = ()) -> tuple[Table, list[Result]]:
    processes = {} if ray.client is None else {"client": ray.client}
    processes.update({ray.label(nid): f for nid, f in ray.facts.items()})
    return skew_report(processes, lock_packages, noun="node", critical=CRITICAL, group=GROUP,
                       tracked=TRACKED_RAY)


def check_facts(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """Every alive node answered the facts task pinned to it."""
    out = [_r("ray.facts", Status.ERROR, f"no facts from node {ray.label(nid)}: {why}",
              node=ray.label(nid)) for nid, why in ray.fact_errors.items()]
    return out or [_r("ray.facts", Status.PASS, f"facts from {len(ray.facts)} node(s)")]


def check_skew(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """Python, Ray, numpy, torch and the key packages identical on every node and the client."""
    _, results = skew_table(ray, tuple(p.name for p in exp.node.lock_packages))
    return [dataclasses.replace(r, check=r.check.replace("skew", "ray.skew", 1)) for r in results]


def check_gpus(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """The GPUs each node advertises to Ray against the GPUs its driver lists."""
    out: list[Result] = []
    for nid, facts in ray.facts.items():
        node = ray.node(nid)
        if node is None:
            continue
        seen, advertised = len(facts.gpus), int(node.gpus)
        if advertised > seen:
            why = facts.nvml_error or "the driver lists none" if not seen else ""
            out.append(_r("ray.gpus", Status.FAIL,
                          f"node {node.label} advertises {advertised} GPU(s) to Ray, its driver "
                          f"lists {seen}" + (f" ({why})" if why else "")
                          + ": tasks asking for GPUs land where there are none",
                          node=node.label, fix=GPU_FIX))
        elif advertised < seen:
            out.append(_r("ray.gpus", Status.WARN,
                          f"node {node.label} advertises {advertised} of its {seen} GPU(s): Ray "
                          "schedules no work on the others", node=node.label, fix=GPU_FIX))
        elif seen:
            out.append(_r("ray.gpus", Status.PASS,
                          f"node {node.label}: {seen} GPU(s), all advertised", node=node.label))
    if not out:
        out.append(_r("ray.gpus", Status.SKIP, "no node has or advertises a GPU"))
    return out


def check_gpu_tasks(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """One num_gpus=1 task per advertised GPU, all at once: each sees exactly one GPU of its
    node, by UUID, and no two tasks on a node get the same one."""
    if not ray.gpu_tasks:
        return [_r("ray.gpu-tasks", Status.SKIP, "no node advertises a GPU")]
    out: list[Result] = []
    by_node: dict[str, list] = {}
    for t in ray.gpu_tasks:
        by_node.setdefault(t.node_id, []).append(t)
    for nid, tasks in by_node.items():
        label = ray.label(nid)
        bad = [t for t in tasks if t.error or len(t.uuids) != 1]
        for t in bad:
            what = t.error or (
                f"Ray gave it GPU {','.join(t.gpu_ids) or 'none'} (CUDA_VISIBLE_DEVICES="
                f"{t.visible if t.visible is not None else 'unset'}) and it sees "
                f"{len(t.uuids)} GPU(s) of the node's {t.node_gpus}"
                + (f": {t.problem}" if t.problem else ""))
            out.append(_r("ray.gpu-tasks", Status.FAIL, f"a num_gpus=1 task on {label}: {what}",
                          node=label, fix=GPU_FIX))
        uuids = [t.uuids[0] for t in tasks if not t.error and len(t.uuids) == 1]
        shared = sorted({u for u in uuids if uuids.count(u) > 1})
        if shared:
            out.append(_r("ray.gpu-tasks", Status.FAIL,
                          f"tasks running at once on {label} share GPU {', '.join(shared)}",
                          node=label, fix=GPU_FIX))
        if not bad and not shared:
            out.append(_r("ray.gpu-tasks", Status.PASS,
                          f"{len(tasks)} task(s) on {label}, each on its own GPU", node=label))
    return out


def check_train(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """A Ray Train TorchTrainer all-reduce gives every worker the known sum (--train)."""
    t = ray.train
    if t is None:
        return [_r("ray.train", Status.SKIP, "not asked for (--train)")]
    if t.error:
        return [_r("ray.train", Status.ERROR, f"TorchTrainer ({t.backend}, {t.workers} "
                   f"worker(s)) did not finish: {t.error}")]
    wrong = [v for v in t.got if abs(v - t.expected) > 1e-6]
    if wrong or not t.got:
        return [_r("ray.train", Status.FAIL, f"TorchTrainer {t.backend} all-reduce over "
                   f"{t.workers} worker(s): expected {t.expected:g} everywhere, the workers hold "
                   f"{', '.join(f'{v:g}' for v in t.got) or 'nothing'}")]
    return [_r("ray.train", Status.PASS, f"TorchTrainer {t.backend} all-reduce over "
               f"{t.workers} worker(s) = {t.expected:g} in {t.seconds:.1f} s")]


def check_node(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """verify node's checks on every node's facts, identical results folded per host."""
    from envcheck.verify.across.workers import node_checks, skipped_node_checks

    labelled = {ray.label(nid): f for nid, f in ray.facts.items()}
    # the raylet, GCS and dashboard agent above Ray's workers, and the driver (this client)
    # with what it started, are the cluster's own on a GPU
    tree = {**labelled, **({"client": ray.client} if ray.client is not None else {})}
    return skipped_node_checks(exp.skip) + node_checks_per_worker(
        labelled, exp.node, node_checks(False, exp.skip),
        cluster_pids_by_host(tree, "Ray worker"), noun="node")


RAY_CHECKS: dict[str, Callable[[RayFacts, RayExpect], list[Result]]] = {
    "ray.nodes": check_nodes,
    "ray.facts": check_facts,
    "ray.skew": check_skew,
    "ray.gpus": check_gpus,
    "ray.gpu-tasks": check_gpu_tasks,
    "ray.train": check_train,
    "ray.node": check_node,
}


def run_ray_checks(ray: RayFacts, exp: RayExpect) -> list[Result]:
    """Every judgement; one that raises becomes an error naming it, and the rest still run."""
    return run_checks(RAY_CHECKS, ray, exp, exp.skip, group=GROUP)
