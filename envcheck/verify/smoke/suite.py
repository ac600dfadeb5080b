"""Smoke tests: prove the stack works end to end on a live cluster, each against a known answer.

Each test runs with its own timeout in a daemon thread; a hung task becomes a ``fail`` result
("timed out after N s"), its futures are cancelled and the next test runs. A test whose package
is absent on the workers (read from their facts, not from the client) is skipped with the
reason; GPU tests skip on clusters without GPU workers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from envcheck import progress
from envcheck.errors import BadInput
from envcheck.report import Result, Status
from envcheck.text import first_line
from envcheck.verify.across.skew import wire_skew
from envcheck.verify.facts import NodeFacts
from envcheck.verify.needs import lacks
from envcheck.verify.runner import skipped
from envcheck.verify.smoke import ddp, frameworks
from envcheck.verify.smoke import tasks as worker_tasks
from envcheck.verify.smoke.client_imports import ClientImports, import_error
from envcheck.verify.smoke.frameworks import SKORCH_ACCURACY_FLOOR
from envcheck.verify.smoke.resources import smoke_resources
from envcheck.verify.smoke.run import (
    GROUP,
    SmokeRun,
    SmokeTest,
    SmokeTimeout,
    WorkerLost,
    check_id,
    lost_workers,
    result,
)
from envcheck.verify.smoke.runner import Board, asked_for, held_out, run_one, timed_run

XGBOOST_ACCURACY_FLOOR = 0.90


# --- the tests ----------------------------------------------------------------------------


def _submit(run: SmokeRun) -> list[Result]:
    """One task pinned to each worker computes sum(range(n)) for its own n."""
    ns = {a: 1000 + i for i, a in enumerate(run.workers)}
    futs = {a: run.submit(worker_tasks.probe, n, worker=a) for a, n in ns.items()}
    out = []
    for a, (value, exc) in run.outcomes(futs, "a task").items():
        n = ns[a]
        if exc is not None:
            out.append(result("submit", Status.FAIL, f"task raised {first_line(exc)}", a))
            continue
        total, pid, host = value
        if total != n * (n - 1) // 2:
            msg = f"sum(range({n})) came back as {total}, expected {n * (n - 1) // 2}"
            out.append(result("submit", Status.FAIL, msg, a))
        elif run.facts[a].pid and pid != run.facts[a].pid:
            msg = (
                f"task ran in pid {pid} on {host}, but this worker's facts came from pid "
                f"{run.facts[a].pid}: the worker restarted since, or the address is shared"
            )
            out.append(result("submit", Status.WARN, msg, a))
        else:
            out.append(result("submit", Status.PASS, f"task ran in pid {pid} on {host}", a))
    return out


# The arange sum's chunks, and the workers both graphs run on: a few, whatever the cluster's
# size. The test proves dask.array works across workers (the product moves chunks between
# them); each worker's own answer is smoke.submit's. A chunk on every worker would make each
# import dask.array (and scipy, numpy) before it answers anything else: about 0.3 CPU s a
# worker.
ARRAY_CHUNKS = 4
ARRAY_WORKERS = 2


def _array(run: SmokeRun) -> list[Result]:
    """A chunked matrix product (moves chunks between workers) and a sum, both known exactly."""
    import dask.array as da

    m, n = 512, 1_000_000
    ones = da.ones((m, m), chunks=(m // 2, m // 2))
    product = (ones @ ones.T).sum()
    total = da.arange(n, chunks=n // ARRAY_CHUNKS).sum()
    on = run.workers[:ARRAY_WORKERS]
    computed = run.client.compute([product, total], workers=on)
    got_product, got_total = run.values(run.track(computed), "dask.array reductions")
    bad = []
    if int(got_product) != m**3:
        bad.append(f"(ones({m},{m}) @ ones.T).sum() = {got_product}, expected {m**3}")
    if int(got_total) != n * (n - 1) // 2:
        bad.append(f"arange({n}).sum() = {got_total}, expected {n * (n - 1) // 2}")
    if bad:
        return [result("array", Status.FAIL, "; ".join(bad))]
    msg = (f"matrix product and arange sum ({ARRAY_CHUNKS} chunks each) on {len(on)} of "
           f"{len(run.workers)} workers match the known answers")
    return [result("array", Status.PASS, msg)]


GPU_KERNEL_N = 100_000


def gpu_kernel_expected(n: int = GPU_KERNEL_N) -> float:
    """sum(3 i^2 + 1 for i in 0..n-1), exact in float64 for this n."""
    return float((n - 1) * n * (2 * n - 1) // 2 + n)


def _gpu_kernel(run: SmokeRun) -> list[Result]:
    """Compile and launch a kernel on every GPU worker; check its sum and which GPU ran it."""
    futs = {a: run.submit(worker_tasks.gpu_kernel, GPU_KERNEL_N, worker=a) for a in run.gpu_workers}
    want = gpu_kernel_expected()
    out = []
    for a, (value, exc) in run.outcomes(futs, "the GPU kernel").items():
        if exc is not None:
            out.append(
                result(
                    "gpu-kernel",
                    Status.FAIL,
                    f"kernel failed: {first_line(exc)}",
                    a,
                    fix="check the driver, CUDA_VISIBLE_DEVICES and that CuPy/Numba match the "
                    "CUDA version the driver supports",
                )
            )
            continue
        where = f"{value['library']} on {value['name']} {value['uuid']}".strip()
        visible = run.facts[a].visible_gpu_uuids
        if abs(value["value"] - want) > 1e-9 * want:
            out.append(
                result("gpu-kernel", Status.FAIL, f"{where}: sum {value['value']!r} != {want!r}", a)
            )
        elif (
            visible
            and value["uuid"].startswith("GPU-")
            and visible[0].startswith("GPU-")
            and value["uuid"] != visible[0]
        ):
            out.append(
                result(
                    "gpu-kernel",
                    Status.FAIL,
                    f"{where}: the kernel ran on {value['uuid']} but NVML says the worker's "
                    f"first visible GPU is {visible[0]}",
                    a,
                    fix="CUDA numbers devices fastest-first unless told otherwise: set "
                    "CUDA_DEVICE_ORDER=PCI_BUS_ID, or give CUDA_VISIBLE_DEVICES as GPU UUIDs",
                )
            )
        else:
            out.append(result("gpu-kernel", Status.PASS, f"{where}: sum matches", a))
    return out


def _dask_cudf(run: SmokeRun) -> list[Result]:
    """A groupby-sum on cuDF partitions on the GPU workers, checked against pandas' answer."""
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    n, keys = 200_000, 7
    pdf = pd.DataFrame({"k": np.arange(n) % keys, "v": np.arange(n, dtype="int64")})
    # Partitions become cuDF on the workers: the client needs dask_cudf's backend, not a GPU.
    gdf = dd.from_pandas(pdf, npartitions=2 * len(run.gpu_workers)).to_backend("cudf")
    grouped = gdf.groupby("k").v.sum().to_backend("pandas")
    fut = run.track([run.client.compute(grouped, workers=run.gpu_workers)])
    (got,) = run.values(fut, "the dask-cudf groupby")
    want = pdf.groupby("k").v.sum()
    got = got.sort_index()
    if list(got.index) != list(want.index) or [int(v) for v in got] != [int(v) for v in want]:
        return [result("dask-cudf", Status.FAIL, f"groupby sum {dict(got)} != {dict(want)}")]
    return [
        result("dask-cudf", Status.PASS, f"groupby-sum of {n} rows into {keys} keys matches pandas")
    ]


def _xgboost(run: SmokeRun) -> list[Result]:
    """xgboost.dask on a synthetic, learnable problem; accuracy must clear a stated floor."""
    import dask.array as da
    import numpy as np
    import xgboost as xgb
    from xgboost import dask as dxgb

    gpu = bool(run.gpu_workers) and len(run.gpu_workers) == len(run.workers)
    n, d = 20_000, 4
    parts = 2 * len(run.workers)
    x = da.random.default_rng(0).normal(size=(n, d), chunks=(max(1, n // parts), d))
    weights = np.array([1.0, -2.0, 0.5, 1.5][:d])
    y = ((x @ weights) > 0).astype("int32")
    dtrain = dxgb.DaskDMatrix(run.client, x, y)
    params = {
        "objective": "binary:logistic",
        "tree_method": "hist",
        "device": "cuda" if gpu else "cpu",
        "max_depth": 4,
        "eta": 0.5,
    }
    booster = dxgb.train(run.client, params, dtrain, num_boost_round=30)["booster"]
    pred = dxgb.predict(run.client, booster, x)
    accuracy_graph = ((pred > 0.5).astype("int32") == y).mean()
    (accuracy,) = run.values(run.track([run.client.compute(accuracy_graph)]), "xgboost predict")
    where = f"xgboost {xgb.__version__}, device={params['device']}, {len(run.workers)} workers"
    if accuracy < XGBOOST_ACCURACY_FLOOR:
        msg = f"{where}: training accuracy {accuracy:.3f} < floor {XGBOOST_ACCURACY_FLOOR}"
        return [result("xgboost", Status.FAIL, msg)]
    msg = f"{where}: training accuracy {accuracy:.3f} >= {XGBOOST_ACCURACY_FLOOR}"
    return [result("xgboost", Status.PASS, msg)]


def gpu_named(device: str, facts: NodeFacts | None) -> str:
    """'cuda:0' as the GPU it is: its physical NVML index and UUID from the worker's facts.

    Every worker pinned to its own GPU sees it as cuda:0; said alone, two ranks read as if
    they shared one GPU.
    """
    if not device.startswith("cuda") or facts is None:
        return device
    local = int(device.split(":", 1)[1]) if ":" in device else 0
    if local >= len(facts.visible_gpu_uuids):
        return device
    uuid = facts.visible_gpu_uuids[local]
    index = next((g.index for g in facts.gpus if g.uuid == uuid), None)
    physical = f"GPU {index} " if index is not None else ""
    return f"{device} = {physical}{uuid}"


def _torch_ddp(run: SmokeRun) -> list[Result]:
    """A process group over the workers (NCCL on GPUs, gloo on CPUs) and a checked all-reduce."""
    plan = ddp.plan_ranks(run.facts)
    if isinstance(plan, str):  # applicability() already skipped the cases it can see
        return [result("torch-ddp", Status.SKIP, plan)]
    futs = ddp.launch(
        run.client, plan, worker_tasks.torch_allreduce, 1 << 20, timeout=run.remaining()
    )
    run.track(futs)
    want = ddp.expected_sum(len(plan.workers))
    out = []
    named = dict(zip(plan.workers, futs))
    for rank, (a, (value, exc)) in enumerate(run.outcomes(named, "the all-reduce").items()):
        label = f"rank {rank}/{len(plan.workers)} over {plan.backend}"
        if exc is not None:
            out.append(
                result(
                    "torch-ddp",
                    Status.FAIL,
                    f"{label}: {first_line(exc)}",
                    a,
                    fix="each rank needs its own GPU (NCCL refuses two ranks on one GPU) and "
                    "the workers must reach worker 0's host on the rendezvous port",
                )
            )
        elif value["min"] != want or value["max"] != want:
            msg = f"{label}: all-reduce gave [{value['min']}, {value['max']}], expected {want}"
            out.append(result("torch-ddp", Status.FAIL, msg, a))
        else:
            nccl = f", NCCL {value['nccl']}" if value["nccl"] else ""
            on = gpu_named(value["device"], run.facts.get(a))
            took = ", ".join(f"{k} {v:.1f} s" for k, v in value.get("phases", {}).items())
            msg = f"{label} on {on}: sum {want:g} (torch {value['torch']}{nccl}" + (
                f"; {took})" if took else ")")
            out.append(result("torch-ddp", Status.PASS, msg, a))
    return out


SMOKE_TESTS: dict[str, SmokeTest] = {
    t.id: t
    for t in (
        SmokeTest("submit", "a task on every worker returns a known sum", _submit),
        SmokeTest(
            "resources",
            "tasks annotated with a worker resource (--resources GPU=1) run only where it is",
            smoke_resources,
            pinned=False,
        ),
        SmokeTest(
            "array",
            "dask.array matrix product and sum with known answers",
            _array,
            worker_packages=(("numpy",),),
            client_modules=("numpy", "dask.array"),
        ),
        SmokeTest(
            "gpu-kernel",
            "a CuPy/Numba kernel on every GPU worker, checked per worker",
            _gpu_kernel,
            worker_packages=(("cupy", "numba-cuda", "numba"),),
            gpu=True,
        ),
        SmokeTest(
            "dask-cudf",
            "a dask-cudf groupby-sum checked against pandas",
            _dask_cudf,
            worker_packages=(("cudf",), ("dask-cudf",)),
            client_modules=("dask.dataframe", "dask_cudf"),
            gpu=True,
        ),
        SmokeTest(
            "xgboost",
            f"xgboost.dask training accuracy >= {XGBOOST_ACCURACY_FLOOR} (device=cuda on GPUs)",
            _xgboost,
            worker_packages=(("xgboost",),),
            client_modules=("dask.array", "xgboost.dask"),
            pinned=False,
            alone=True,
        ),
        SmokeTest(
            "torch-ddp",
            "torch.distributed through the workers (NCCL on GPUs, gloo on CPUs), all-reduce",
            _torch_ddp,
            worker_packages=(("torch",),),
            alone=True,
        ),
        SmokeTest(
            "skorch",
            f"a skorch fit on every worker's device, accuracy >= {SKORCH_ACCURACY_FLOOR}",
            frameworks.skorch_fit,
            worker_packages=(("skorch",), ("torch",)),
        ),
        SmokeTest(
            "dask-pytorch-ddp",
            "dask_pytorch_ddp.dispatch.run over every worker, a checked all-reduce",
            frameworks.ddp_dispatch,
            worker_packages=(("dask-pytorch-ddp", "dask_pytorch_ddp"), ("torch",)),
            client_modules=("dask_pytorch_ddp.dispatch",),
            pinned=False,
            alone=True,
        ),
    )
}


# --- which tests apply ----------------------------------------------------------------------


def applicability(
    test: SmokeTest,
    facts: Mapping[str, NodeFacts],
    client_import_error: Callable[[str], str] = import_error,
) -> Result | None:
    """None when ``test`` can run; else a skip (nothing to test) or a fail (half-installed)."""
    return on_workers(test, facts) or on_client(test, client_import_error)


def on_workers(test: SmokeTest, facts: Mapping[str, NodeFacts]) -> Result | None:
    """applicability as the workers' facts say it: None, a skip or a fail."""
    workers = sorted(facts)
    if not workers:
        return result(test.id, Status.SKIP, "no workers to run on")
    if test.gpu:
        workers = sorted(a for a, f in facts.items() if ddp.is_gpu_worker(f))
        if not workers:
            why = sorted({f.nvml_error for f in facts.values() if f.nvml_error})
            detail = f" (NVML: {why[0]})" if why else ""
            return result(
                test.id, Status.SKIP, f"no GPU workers: none of {len(facts)} sees a GPU{detail}"
            )
    for stems in test.worker_packages:
        missing = [a for a in workers if lacks(facts[a], stems)]
        name = " or ".join(stems)
        if missing and len(missing) == len(workers):
            return result(test.id, Status.SKIP, f"{name} is not installed on the workers")
        if missing:
            return result(
                test.id,
                Status.FAIL,
                f"{name} is installed on some workers but not on {', '.join(missing)}",
                fix=f"install {stems[0]} in every worker's environment",
            )
    if test.id == "torch-ddp":
        plan = ddp.plan_ranks(facts)
        if isinstance(plan, str):
            return result(test.id, Status.SKIP, plan)
    return None


def on_client(test: SmokeTest, client_import_error: Callable[[str], str]) -> Result | None:
    """applicability as the client's imports say it: None, or a skip naming the module."""
    for module in test.client_modules:
        why = client_import_error(module)
        if why:
            return result(test.id, Status.SKIP, f"{module} does not import on the client ({why})")
    return None


# --- the runner -----------------------------------------------------------------------------


def run_smoke(
    client: Any,
    facts: Mapping[str, NodeFacts],
    selected: set[str] | None = None,
    timeout: float = 60.0,
    *,
    tests: Mapping[str, SmokeTest] | None = None,
    skip: Collection[str] = (),
    skewed: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """Run the selected (default: all) smoke tests; never raises for a broken cluster. Tests
    that need no collective over every worker run at once, each in its own thread; beside
    them those that do (SmokeTest.alone: a collective waits for a thread on every worker, so
    two at once could each hold what the other waits for) run one by one. Their tasks never
    wait on each other's, so the two lanes cannot block each other. The client's imports for
    the tests' graphs run in one thread beside them (client_imports.py); a test waits only for
    its own. Results come in the tests' order.

    A test `skip` names (smoke.NAME) does not run: one skip says so (it wins over `selected`).
    ``skewed``: worker -> the skew checks that fail naming it (skew.skew_by_process); a worker
    whose skew is on the wire (skew.WIRE: a task from this client could crash it) is held out:
    each test says so for it, and a test that places tasks on any worker does not run."""
    tests = SMOKE_TESTS if tests is None else tests
    if selected is not None:
        unknown = sorted(set(selected) - set(tests))
        if unknown:
            raise BadInput(
                f"unknown smoke test {', '.join(unknown)}; choose from {', '.join(tests)}"
            )
    workers = {a: f for a, f in facts.items() if f.role not in ("client", "scheduler")}
    skewed = skewed or {}
    held = {a: wire_skew(skewed.get(a, ())) for a in workers}
    held = {a: checks for a, checks in held.items() if checks}
    workers = {a: f for a, f in workers.items() if a not in held}
    slots: list[SmokeTest | list[Result]] = []  # each test's place in the report
    for test in tests.values():
        if check_id(test.id) in skip:
            slots.append([skipped(check_id(test.id), GROUP)])
            continue
        if selected is not None and test.id not in selected:
            continue
        not_applicable = on_workers(test, workers) if workers or not held else None
        if not_applicable is not None:
            slots.append([asked_for(not_applicable, selected)])
            continue
        slots.append(held_out(test, held))
        if (test.pinned or not held) and workers:
            slots.append(test)
    runs = [t for t in slots if isinstance(t, SmokeTest)]
    with ClientImports(m for t in runs for m in t.client_modules) as imports:
        done = _run_all(runs, client, workers, timeout, skewed, selected, imports)
    return [r for slot in slots
            for r in (done[slot.id] if isinstance(slot, SmokeTest) else slot)]


def _run_all(runs: list[SmokeTest], client: Any, workers: Mapping[str, NodeFacts],
             timeout: float, skewed: Mapping[str, tuple[str, ...]],
             selected: set[str] | None, imports: ClientImports) -> dict[str, list[Result]]:
    """Each test's results: those without a collective at once, each in its own thread, and
    beside them the collectives one by one; a test first waits for its client imports."""

    def checked(test: SmokeTest, mine: Mapping[str, NodeFacts]) -> list[Result]:
        why = on_client(test, imports.error)
        if why is not None:
            return [asked_for(why, selected)]
        with board.running(test.id):
            return timed_run(test, client, dict(mine), timeout, skewed)

    def one_by_one() -> dict[str, list[Result]]:
        out: dict[str, list[Result]] = {}
        mine = dict(workers)
        for test in (t for t in runs if t.alone):
            for gone in lost_workers(client, mine) if out else ():  # reported once: later
                del mine[gone]  # tests run without it
            not_applicable = on_workers(test, mine)
            out[test.id] = [not_applicable] if not_applicable is not None else checked(test, mine)
        return out

    together = [t for t in runs if not t.alone]
    board = Board(len(runs), len(workers), progress.Line(show=False))
    with progress.step(board.text()) as board.line, \
            ThreadPoolExecutor(len(together) + 1, thread_name_prefix="envcheck-smoke") as pool:
        running = {t.id: pool.submit(checked, t, workers) for t in together}
        lane = pool.submit(one_by_one)
        done = {name: f.result() for name, f in running.items()}
        done.update(lane.result())
    return done


__all__ = [
    "SMOKE_TESTS",
    "SmokeRun",
    "SmokeTest",
    "SmokeTimeout",
    "WorkerLost",
    "applicability",
    "on_client",
    "on_workers",
    "run_one",
    "run_smoke",
    "timed_run",
]
