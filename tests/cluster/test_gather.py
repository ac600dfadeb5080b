"""The facts round against real clusters: LocalCluster processes and a worker from a venv
that has no envcheck."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck.report import Status
from envcheck.verify.cluster import gather
from envcheck.verify.cluster.gather import facts_payload, gather_facts
from tests.support.deadlines import HANG
from tests.support.smoke_cluster import local_client
from tests.support.subprocess_cluster import start_cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_workers() -> Iterator[object]:
    with local_client(2) as client:
        yield client


def test_every_process_reports_once(two_workers) -> None:
    client = two_workers
    cf = gather_facts(client, timeout=30)
    addresses = sorted(client.scheduler_info(n_workers=-1)["workers"])
    assert cf.errors == ()
    assert sorted(cf.workers) == addresses == list(cf.expected_workers)
    assert cf.client.role == "client" and cf.scheduler is not None
    assert cf.scheduler.role == "scheduler"
    assert cf.scheduler_address == client.scheduler.address
    pids = {f.pid for f in cf.workers.values()}
    assert len(pids) == 2 and cf.client.pid not in pids  # worker processes, not threads
    for address, f in cf.workers.items():
        assert f.role == "worker" and f.address == address
        assert f.python_packages["distributed"] == cf.client.python_packages["distributed"]
    assert list(cf.by_process()) == ["client", "scheduler", *addresses]


def test_source_is_compiled_once_per_worker_and_kept(two_workers) -> None:
    client = two_workers
    gather_facts(client, timeout=30)
    name = f"_envcheck_facts_{facts_payload().digest}"

    def has_module() -> bool:
        import sys

        return name in sys.modules

    assert set(client.run(has_module).values()) == {True}


def _raising_runner(bad_address: str):
    real = gather._RUNNER

    async def runner(digest, source, role, kwargs, dask_worker=None, dask_scheduler=None):
        if dask_worker is not None and dask_worker.address == bad_address:
            raise RuntimeError("collector broke on purpose")
        return await real(
            digest, source, role, kwargs, dask_worker=dask_worker, dask_scheduler=dask_scheduler
        )

    return runner


def test_a_raising_collector_is_an_error_naming_the_worker_others_still_report(
    two_workers,
) -> None:
    client = two_workers
    bad, good = sorted(client.scheduler_info(n_workers=-1)["workers"])
    cf = gather_facts(client, timeout=30, runner=_raising_runner(bad))
    assert list(cf.workers) == [good]
    (err,) = cf.errors
    assert err.status is Status.ERROR and err.node == bad and err.check == "facts"
    assert "collector broke on purpose" in err.message
    assert cf.scheduler is not None  # the scheduler's own facts still came back


def test_worker_whose_venv_lacks_envcheck_reports_facts(
    tmp_path: Path, venv_distributed_only: str
) -> None:
    """The collector travels by value: a worker from a separate venv (only distributed and
    its dependencies, no envcheck) still reports its facts."""
    from distributed import Client

    cluster = start_cluster(tmp_path / "cluster")
    try:
        cluster.add_worker("bare", python=venv_distributed_only)
        address = cluster.wait_for_workers(["bare"])["bare"]
        with Client(cluster.address, set_as_default=False, timeout=30) as client:
            (can_import,) = client.run(
                lambda: importlib.util.find_spec("envcheck") is not None
            ).values()
            assert can_import is False
            cf = gather_facts(client, timeout=30)
        assert cf.errors == ()
        f = cf.workers[address]
        assert f.python_executable.startswith(str(Path(venv_distributed_only).parent.parent))
        assert "envcheck" not in f.python_packages
        assert f.python_packages["distributed"] == cf.client.python_packages["distributed"]
        assert f.python_executable != sys.executable
    finally:
        cluster.stop()


def test_import_probes_run_on_every_worker_in_child_processes(two_workers) -> None:
    from envcheck.verify.cluster.gather import CollectOptions

    client = two_workers
    options = CollectOptions(import_modules=("json", "no_such_module_for_envcheck"))
    cf = gather_facts(client, timeout=30, options=options)
    assert cf.errors == () and len(cf.workers) == 2
    for f in (*cf.workers.values(), cf.scheduler, cf.client):
        probes = {p.module: p for p in f.imports}
        assert probes["json"].ok
        assert not probes["no_such_module_for_envcheck"].ok
        assert "No module named" in probes["no_such_module_for_envcheck"].error


def _slow_runner(slow: str, release: Path):
    """Delegates to the real collector, except that `slow` ("scheduler" or a worker
    address) answers only once `release` exists (at most ten minutes on)."""
    real = gather._RUNNER
    held = str(release)

    async def runner(digest, source, role, kwargs, dask_worker=None, dask_scheduler=None):
        import asyncio
        import os

        me = dask_worker.address if dask_worker is not None else "scheduler"
        for _ in range(6000 if me == slow else 0):
            if os.path.exists(held):
                break
            await asyncio.sleep(0.1)
        return await real(
            digest, source, role, kwargs, dask_worker=dask_worker, dask_scheduler=dask_scheduler
        )

    return runner


@pytest.mark.parametrize("who", ["worker", "scheduler"])
def test_a_slow_process_is_an_error_after_the_timeout_the_rest_report(
    two_workers, who, tmp_path: Path
) -> None:
    import time

    client = two_workers
    slow, fast = sorted(client.scheduler_info(n_workers=-1)["workers"])
    target = slow if who == "worker" else "scheduler"
    release = tmp_path / "release"
    t0 = time.monotonic()
    try:
        cf = gather_facts(client, timeout=1, runner=_slow_runner(target, release))
        assert time.monotonic() - t0 < HANG  # the slow one is held until the test ends
    finally:
        release.touch()
    (err,) = cf.errors
    assert "no answer within 1 s" in err.message and err.message.startswith(who)
    if who == "worker":
        assert err.node == slow and list(cf.workers) == [fast] and cf.scheduler is not None
    else:
        assert err.node == client.scheduler.address and cf.scheduler is None
        assert sorted(cf.workers) == [slow, fast]


def test_scheduler_that_runs_no_code_still_gets_worker_facts() -> None:
    """blocked-handlers: run_function (a locked-down scheduler): the scheduler's own facts
    are an error saying why; the workers are asked directly and report."""
    with local_client(2, blocked_handlers=["run_function"]) as client:
        cf = gather_facts(client, timeout=30)
        (err,) = cf.errors
        assert err.message.startswith("scheduler did not report") and "disallowed" in err.message
        assert cf.scheduler is None
        assert sorted(cf.workers) == sorted(client.scheduler_info(n_workers=-1)["workers"])
        assert all(f.role == "worker" and f.address for f in cf.workers.values())


def test_workers_get_the_source_by_digest_and_again_when_they_lack_it(two_workers) -> None:
    """Rounds send only the digest to workers that loaded the facts package before; a worker that
    has not (here: one that forgot it, like a worker started since) is sent the source."""
    client = two_workers
    gather_facts(client, timeout=30)
    forgetful, other = sorted(client.scheduler_info(n_workers=-1)["workers"])
    name = f"_envcheck_facts_{facts_payload().digest}"

    def forget() -> bool:
        import sys

        return sys.modules.pop(name, None) is not None

    real = gather._RUNNER

    async def recording(digest, source, role, kwargs, dask_worker=None, dask_scheduler=None):
        if dask_worker is not None:  # what each worker was sent, kept on the worker
            dask_worker.__dict__.setdefault("_test_sources", []).append(len(source))
        return await real(
            digest, source, role, kwargs, dask_worker=dask_worker, dask_scheduler=dask_scheduler
        )

    def sent(dask_worker) -> list[int]:
        return dask_worker.__dict__.pop("_test_sources", [])

    assert client.run(forget, workers=[forgetful]) == {forgetful: True}
    cf = gather_facts(client, timeout=30, runner=recording)
    assert cf.errors == () and sorted(cf.workers) == [forgetful, other]
    size = len(facts_payload().source)
    assert client.run(sent) == {forgetful: [0, size], other: [0]}  # digest; source on request
    assert cf.workers[forgetful].python_packages == cf.workers[other].python_packages
    assert client.run(lambda: name in __import__("sys").modules) == {
        forgetful: True,
        other: True,
    }
