"""bench's measurements on a real local Dask cluster: transfers and a gloo all-reduce, and a
worker that never runs its task."""

from __future__ import annotations

import dataclasses
import importlib.util
import time

from envcheck.report import Status
from envcheck.verify.smoke.measure import (
    MiB,
    measure_transfers,
    run_measurements,
)
from tests.support.deadlines import HANG
from tests.support.smoke_cluster import local_cluster_fixture  # noqa: F401  (the fixture)


def test_transfers_and_gloo_allreduce_on_a_local_cluster(local_cluster):
    client, facts = local_cluster
    started = time.monotonic()
    ms = run_measurements(
        client, facts, sizes=(1 * MiB, 4 * MiB), repeats=2, allreduce_sizes=(MiB,)
    )
    took = time.monotonic() - started
    transfers = [m for m in ms if m.name.startswith("transfer tcp host")]
    assert [m.name for m in transfers] == [
        "transfer tcp host (NumPy) 1 MiB",
        "transfer tcp host (NumPy) 4 MiB",
    ]
    a, b = sorted(facts)
    assert all(m.node == f"{a} -> {b}" and m.value > 0 and m.unit == "GB/s" for m in transfers)
    assert all(m.reference is None and m.verdict == "" for m in transfers)
    if importlib.util.find_spec("torch") is not None:
        busbw = [m for m in ms if m.name == "gloo all-reduce 1 MiB busbw"]
        algbw = [m for m in ms if m.name == "gloo all-reduce 1 MiB algbw"]
        assert busbw and algbw and busbw[0].value == algbw[0].value  # 2 ranks: factor 1
        assert ms.problems == []
    else:
        assert [p.message for p in ms.problems] == ["torch is not installed on any worker"]
    assert took < 60


def test_a_worker_that_never_runs_the_task_is_an_error_not_a_hang(local_cluster):
    client, facts = local_cluster
    real = sorted(facts)[0]
    ghost = "tcp://127.0.0.1:9"  # in the facts, but no such worker: its task never runs
    fake = {real: facts[real], ghost: dataclasses.replace(facts[real], address=ghost)}
    started = time.monotonic()
    out = measure_transfers(client, fake, sizes=(MiB,), repeats=1, timeout=1.0)
    assert time.monotonic() - started < HANG
    assert list(out) == []
    assert len(out.problems) == 1
    problem = out.problems[0]
    assert problem.status is Status.ERROR
    assert problem.check == "bench.transfer"
    assert "not measured" in problem.message and "TimeoutError" in problem.message
