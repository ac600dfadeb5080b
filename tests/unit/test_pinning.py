"""GPU pinning across workers and per-host folding of node checks: pure, from descriptions."""

from __future__ import annotations

import dataclasses

from envcheck.report import Result, Status
from envcheck.verify.across.pinning import check_pinning
from envcheck.verify.across.workers import (
    cluster_pids_by_host,
    fold_per_host,
    node_checks_per_worker,
)
from envcheck.verify.facts import NodeFacts
from envcheck.verify.node.checks import run_node_checks
from tests.support.factories import (
    expect,
    h200x2,
    healthy_a100x8,
    no_driver_node,
    with_env,
    with_process,
)


def worker(base: NodeFacts, port: int, cvd: str | None, host: str = "", pid: int = 0) -> NodeFacts:
    f = with_env(base, CUDA_VISIBLE_DEVICES=cvd) if cvd is not None else base
    return dataclasses.replace(
        f,
        role="worker",
        address=f"tcp://{host or base.host}:{port}",
        host=host or base.host,
        pid=pid or port,
        own_pids=(pid or port,),
    )


def by_check(results: list[Result], check: str) -> list[Result]:
    return [r for r in results if r.check == check]


def dask_cuda_workers(base: NodeFacts, n: int, host: str = "") -> dict[str, NodeFacts]:
    """What dask-cuda does: worker i sees "i, i+1, ..., 0, ..." (its own GPU first)."""
    out = {}
    for i in range(n):
        order = ",".join(str((i + k) % n) for k in range(n))
        w = worker(base, 5000 + i, order, host)
        out[w.address] = w
    return out


def test_one_worker_per_gpu_passes_everything() -> None:
    results = check_pinning(dask_cuda_workers(h200x2(), 2))
    assert {r.status for r in results} == {Status.PASS}
    assert {r.check for r in results} == {
        "pinning.visible", "pinning.shared", "pinning.unused", "pinning.driver-agreement"
    }


def test_two_workers_on_one_gpu_fail_naming_both() -> None:
    a, b = worker(h200x2(), 5000, "0"), worker(h200x2(), 5001, "0,1")
    results = check_pinning({a.address: a, b.address: b})
    (shared,) = by_check(results, "pinning.shared")
    assert shared.status is Status.FAIL
    assert a.address in shared.message and b.address in shared.message
    assert "GPU 0" in shared.message and h200x2().gpus[0].uuid in shared.message
    # GPU 1 is nobody's first device: idle
    (unused,) = by_check(results, "pinning.unused")
    assert unused.status is Status.WARN and "(GPU 1)" in unused.message


def test_duplicate_index_hides_every_gpu_and_fails_visibility() -> None:
    # CUDA_VISIBLE_DEVICES=0,0 makes CUDA expose no GPU at all
    a = worker(h200x2(), 5000, "0,0")
    b = worker(h200x2(), 5001, "1")
    (vis,) = by_check(check_pinning({a.address: a, b.address: b}), "pinning.visible")
    assert vis.status is Status.FAIL and vis.node == a.address
    assert "'0,0'" in vis.message and "no GPU" in vis.message


def test_deliberately_hidden_gpus_only_warn() -> None:
    a = worker(h200x2(), 5000, "")
    b = worker(h200x2(), 5001, "0")
    c = worker(h200x2(), 5002, "1")
    results = check_pinning({w.address: w for w in (a, b, c)})
    (vis,) = by_check(results, "pinning.visible")
    assert vis.status is Status.WARN and "CPU-only worker" in vis.message


def test_unused_gpus_on_a_host_warn_with_their_indices() -> None:
    workers = dask_cuda_workers(healthy_a100x8(), 8)
    four = dict(list(workers.items())[:4])
    (unused,) = by_check(check_pinning(four), "pinning.unused")
    assert unused.status is Status.WARN
    assert "4 of 8 GPUs" in unused.message and "GPU 4, 5, 6, 7" in unused.message


def test_drivers_disagreeing_across_hosts_warn_naming_hosts() -> None:
    a = dask_cuda_workers(h200x2(), 2, host="node-a")
    b = dask_cuda_workers(h200x2(driver_version="570.86.10"), 2, host="node-b")
    (drv,) = by_check(check_pinning({**a, **b}), "pinning.driver-agreement")
    assert drv.status is Status.WARN
    assert "580.95.05 on node-a" in drv.message and "570.86.10 on node-b" in drv.message


def test_same_first_gpu_on_different_hosts_is_fine() -> None:
    a = dask_cuda_workers(h200x2(), 2, host="node-a")
    b = dask_cuda_workers(h200x2(), 2, host="node-b")  # same UUIDs in the description
    results = check_pinning({**a, **b})
    assert all(r.status is Status.PASS for r in by_check(results, "pinning.shared"))


def test_no_gpu_anywhere_skips_saying_why() -> None:
    w = worker(no_driver_node(), 5000, None)
    (r,) = check_pinning({w.address: w})
    assert r.status is Status.SKIP
    assert "NVML Shared Library Not Found" in r.message


def test_gpu_resource_without_a_gpu_fails() -> None:
    w = dataclasses.replace(worker(no_driver_node(), 5000, None), resources={"GPU": 1.0})
    results = check_pinning({w.address: w})
    (bad,) = by_check(results, "pinning.visible")
    assert bad.status is Status.FAIL and bad.node == w.address


def test_node_checks_fold_host_facts_and_keep_per_worker_differences() -> None:
    workers = dask_cuda_workers(h200x2(), 2)
    # one worker's environment drifted: it lacks numpy
    addr = sorted(workers)[1]
    workers[addr] = dataclasses.replace(
        workers[addr], packages={k: v for k, v in workers[addr].packages.items() if k != "numpy"}
    )
    from tests.support.factories import lock_for

    exp = expect(lock_packages=lock_for(h200x2()), lock_path="env.lock", min_glibc="2.17")
    results = node_checks_per_worker(
        workers, exp, lambda f, e, n: run_node_checks(f, e, n, plugins=False)
    )
    glibc = by_check(results, "glibc")
    assert len(glibc) == 1 and glibc[0].node == "gpu-node-1 (2 workers)"
    packages = by_check(results, "packages")
    assert {(r.node, r.status) for r in packages} == {
        (sorted(workers)[0], Status.PASS),
        (addr, Status.FAIL),
    }
    assert "numpy" in next(r for r in packages if r.status is Status.FAIL).message


def test_cluster_processes_on_a_gpu_are_not_foreign() -> None:
    # Each dask-cuda worker sees every GPU; the other worker's CUDA context is on GPU 1.
    workers = dask_cuda_workers(h200x2(), 2)
    a, b = sorted(workers)
    workers[a] = with_process(workers[a], 1, pid=workers[b].pid, user="alice", mib=500)
    checks = lambda f, e, n: run_node_checks(f, e, n, plugins=False)  # noqa: E731
    alone = node_checks_per_worker({a: workers[a]}, expect(), checks)
    assert by_check(alone, "busy-gpus")[0].status is Status.FAIL  # without knowing the cluster
    known = node_checks_per_worker(workers, expect(), checks, cluster_pids_by_host(workers))
    assert {r.status for r in by_check(known, "busy-gpus")} == {Status.PASS}
    # a stranger's process is still caught
    workers[a] = with_process(workers[a], 0, pid=999, user="bob", mib=2000)
    known = node_checks_per_worker(workers, expect(), checks, cluster_pids_by_host(workers))
    busy = [r for r in by_check(known, "busy-gpus") if r.status is Status.FAIL]
    assert len(busy) == 1 and busy[0].node == a and "bob" in busy[0].message


def test_fold_keeps_order_and_single_worker_hosts_untouched() -> None:
    r1 = Result("x", Status.PASS, "same")
    r2 = Result("y", Status.WARN, "differs a")
    r3 = Result("y", Status.WARN, "differs b")
    out = fold_per_host(
        {"w1": [r1, r2], "w2": [r1, r3], "w3": [r1]},
        {"w1": "h", "w2": "h", "w3": "other"},
    )
    assert [(r.check, r.node, r.message) for r in out] == [
        ("x", "h (2 workers)", "same"),
        ("y", "", "differs a"),
        ("y", "", "differs b"),
        ("x", "", "same"),
    ]
