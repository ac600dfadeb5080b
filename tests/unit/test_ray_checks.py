"""verify ray's judgements on facts built here (the collection path runs in tests/ray)."""

from __future__ import annotations

import dataclasses

from envcheck.report import Status
from envcheck.verify.ray.checks import RAY_CHECKS, run_ray_checks
from envcheck.verify.ray.model import GpuTask, RayExpect, RayFacts, RayNode, TrainRun
from tests.support.factories import gpu_uuid, h200x2


def _cluster(n_nodes: int = 2, gpus: float = 2.0, **overrides: object) -> RayFacts:
    nodes = tuple(RayNode(f"{i:02d}" + "ab" * 27, f"10.0.0.{i + 1}", f"gpu{i + 1}", True, gpus)
                  for i in range(n_nodes))
    facts = {n.node_id: h200x2(host=n.hostname, packages={**h200x2().packages, "ray": "2.60.0"})
             for n in nodes}
    tasks = tuple(GpuTask(n.node_id, (str(g),), str(g), (gpu_uuid(g),), 2)
                  for n in nodes for g in range(int(gpus)))
    base = RayFacts("10.0.0.1:6379", "2.60.0", nodes, facts, {}, None, tasks)
    return dataclasses.replace(base, **overrides)


def _only(results, check: str, status: Status):
    return [r for r in results if r.check.startswith(check) and r.status is status]


def test_a_healthy_two_node_gpu_cluster_passes_every_ray_check():
    results = run_ray_checks(_cluster(), RayExpect(nodes=2))
    ray_results = [r for r in results if r.check.startswith("ray.")]
    assert {r.status for r in ray_results} <= {Status.PASS, Status.SKIP}, ray_results
    assert _only(results, "ray.gpu-tasks", Status.PASS)[0].message == (
        "2 task(s) on gpu1 (00ababab), each on its own GPU")


def test_a_dead_node_and_a_shortfall_fail_naming_them():
    ray = _cluster(3)
    dead = dataclasses.replace(ray.nodes[2], alive=False, death="raylet died (OOM)")
    results = run_ray_checks(dataclasses.replace(ray, nodes=(*ray.nodes[:2], dead)),
                             RayExpect(nodes=3))
    fails = _only(results, "ray.nodes", Status.FAIL)
    assert fails[0].node == "gpu3 (02ababab)" and "raylet died (OOM)" in fails[0].message
    assert fails[1].message == "2 alive node(s), 3 expected: 1 node never joined"


def test_a_node_advertising_more_gpus_than_its_driver_lists_fails_fewer_warns():
    ray = _cluster()
    over = dataclasses.replace(ray.nodes[0], gpus=4.0)
    under = dataclasses.replace(ray.nodes[1], gpus=1.0)
    results = run_ray_checks(dataclasses.replace(ray, nodes=(over, under)), RayExpect())
    (fail,) = _only(results, "ray.gpus", Status.FAIL)
    assert fail.node == "gpu1 (00ababab)"
    assert "advertises 4 GPU(s) to Ray, its driver lists 2" in fail.message
    (warn,) = _only(results, "ray.gpus", Status.WARN)
    assert warn.node == "gpu2 (01ababab)" and "advertises 1 of its 2 GPU(s)" in warn.message


def test_two_tasks_on_one_gpu_or_a_task_seeing_none_fail_naming_the_node():
    ray = _cluster(1)
    (a, b) = ray.gpu_tasks
    shared = dataclasses.replace(b, uuids=a.uuids)
    results = run_ray_checks(dataclasses.replace(ray, gpu_tasks=(a, shared)), RayExpect())
    (fail,) = _only(results, "ray.gpu-tasks", Status.FAIL)
    assert f"share GPU {gpu_uuid(0)}" in fail.message and fail.node == "gpu1 (00ababab)"
    blind = dataclasses.replace(b, uuids=(), problem="CUDA_VISIBLE_DEVICES=7: no such GPU")
    results = run_ray_checks(dataclasses.replace(ray, gpu_tasks=(a, blind)), RayExpect())
    (fail,) = _only(results, "ray.gpu-tasks", Status.FAIL)
    assert "sees 0 GPU(s) of the node's 2: CUDA_VISIBLE_DEVICES=7: no such GPU" in fail.message


def test_numpy_or_ray_skew_between_nodes_fails_naming_the_odd_node():
    ray = _cluster(3)
    odd = ray.nodes[2].node_id
    facts = dict(ray.facts)
    facts[odd] = dataclasses.replace(facts[odd], packages={**facts[odd].packages,
                                                           "numpy": "2.3.5"})
    results = run_ray_checks(dataclasses.replace(ray, facts=facts), RayExpect())
    (fail,) = _only(results, "ray.skew", Status.FAIL)
    assert fail.node == "gpu3 (02ababab)" and "2.3.5" in fail.message


def test_train_all_reduce_must_hold_the_known_sum_on_every_worker():
    ok = TrainRun(2, "nccl", 3.0, got=(3.0, 3.0, 3.0, 3.0), seconds=12.0)
    results = run_ray_checks(_cluster(train=ok), RayExpect())
    assert _only(results, "ray.train", Status.PASS)
    wrong = dataclasses.replace(ok, got=(3.0, 3.0, 2.0, 3.0))
    (fail,) = _only(run_ray_checks(_cluster(train=wrong), RayExpect()), "ray.train", Status.FAIL)
    assert "expected 3 everywhere" in fail.message and "2" in fail.message
    hung = dataclasses.replace(ok, got=(), error="no result within 60 s")
    assert _only(run_ray_checks(_cluster(train=hung), RayExpect()), "ray.train", Status.ERROR)


def test_skip_reports_the_check_once_and_runs_the_rest():
    results = run_ray_checks(_cluster(), RayExpect(skip=frozenset({"ray.gpus"})))
    (skipped,) = [r for r in results if r.check == "ray.gpus"]
    assert skipped.status is Status.SKIP and skipped.message == "skipped by --skip"
    seen = {r.check for r in results}
    assert {c for c in RAY_CHECKS if c not in ("ray.gpus", "ray.node", "ray.skew")} <= seen
    assert any(c.startswith("ray.skew") for c in seen) and "driver" in seen  # verify node's
    node_skip = run_ray_checks(_cluster(), RayExpect(skip=frozenset({"glibc"})))
    assert [(r.status, r.node) for r in node_skip if r.check == "glibc"] == [(Status.SKIP, "")]


def test_every_ray_result_reports_under_its_catalog_id_or_an_aspect_of_it():
    from envcheck.verify.catalog import checks_of

    node_ids = {c.id for c in checks_of("ray") if c.kind == "node"}
    ray = _cluster(3)
    dead = dataclasses.replace(ray.nodes[2], alive=False, death="raylet died (OOM)")
    clusters = [
        _cluster(),
        dataclasses.replace(ray, nodes=(*ray.nodes[:2], dead), fact_errors={"x": "gone"},
                            train=TrainRun(2, "gloo", 3.0, got=(3.0, 2.0))),
        _cluster(1, gpus=0.0),
    ]
    for c in clusters:
        for check_id, fn in RAY_CHECKS.items():
            for r in fn(c, RayExpect(nodes=3)):
                if check_id == "ray.node":  # verify node's checks, under their own ids
                    assert r.check in node_ids, r
                else:
                    assert r.check == check_id or r.check.startswith(f"{check_id}."), r
