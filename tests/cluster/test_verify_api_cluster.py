"""envcheck.verify_cluster on a real local Dask cluster: a live client, an address, and the
refusal of both."""

from __future__ import annotations

import pytest

from envcheck.api import verify_cluster
from envcheck.errors import BadInput
from envcheck.report import Report, Status
from tests.support.deadlines import HANG
from tests.support.smoke_cluster import local_cluster_fixture  # noqa: F401  (the fixture)


def _by(report: Report, check: str):
    return [r for r in report.results if r.check == check]


def test_verify_cluster_on_a_live_client_uses_it_and_leaves_it_open(local_cluster):
    client, facts = local_cluster
    report = verify_cluster(
        client, smoke="submit,array", skip={"smoke.array", "pinning", "glibc"}, timeout=30
    )
    assert report.title == "envcheck verify cluster"
    (members,) = _by(report, "workers")
    assert members.status is Status.PASS and f"{len(facts)} of {len(facts)}" in members.message
    submits = _by(report, "smoke.submit")
    assert sorted(r.node for r in submits) == sorted(facts)
    assert all(r.status is Status.PASS for r in submits)
    for check in ("smoke.array", "pinning", "glibc"):
        (only,) = _by(report, check)
        assert only.status is Status.SKIP and only.message == "skipped by --skip"
    assert not [r for r in report.results if r.check.startswith("pinning.")]
    assert report.environment["cluster"] == f"client of {client.scheduler.address}"
    # the client is the caller's: still open, still usable
    assert client.status == "running"
    assert client.submit(sum, [1, 2], pure=False).result(timeout=HANG) == 3


def test_verify_cluster_given_a_client_never_starts_a_cluster_of_its_own(local_cluster):
    """bench=True on the caller's client: the embedded default's extras (the UCX comparison on
    a second local cluster, the NVML gap) belong to a cluster envcheck starts, so none of them
    runs; the report names the caller's cluster."""
    client, _ = local_cluster
    report = verify_cluster(client, bench=True, smoke="none", timeout=30)
    assert report.environment["cluster"] == f"client of {client.scheduler.address}"
    assert not _by(report, "bench.ucx"), "the embedded UCX comparison ran beside the client"
    assert not _by(report, "embedded-cluster")
    assert report.measurements, "bench=True measured the caller's cluster"
    assert client.status == "running"


def _submitted(client) -> int:
    """Keys the scheduler was given since the counting plugin was added."""
    return client.run_on_scheduler(
        lambda dask_scheduler: dask_scheduler.plugins["envcheck-test-count"].keys
    )


def _count_submissions(client) -> None:
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Count(SchedulerPlugin):
        name = "envcheck-test-count"

        def __init__(self) -> None:
            self.keys = 0

        def update_graph(self, scheduler, *args, keys=(), **kwargs) -> None:
            self.keys += len(keys)

    client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.add_plugin(Count()))


def test_verify_cluster_connects_to_an_address_and_runs_no_task_with_smoke_none(local_cluster):
    client, facts = local_cluster
    _count_submissions(client)
    report = verify_cluster(client.scheduler.address, smoke="none", timeout=30)
    assert report.environment["cluster"] == client.scheduler.address
    assert not [r for r in report.results if r.check.startswith("smoke.")]
    assert _by(report, "workers")[0].status is Status.PASS
    # --smoke none: nothing was submitted (resources, which submits, is a smoke test now)
    assert _submitted(client) == 0
    verify_cluster(client.scheduler.address, smoke="resources", timeout=30)
    assert _submitted(client) == 0  # no worker advertises a resource: skipped, nothing sent
    verify_cluster(client.scheduler.address, smoke="submit", timeout=30)
    assert _submitted(client) == len(facts)  # the counter counts: one task per worker
    assert client.status == "running"


def test_verify_cluster_refuses_a_client_and_an_address(local_cluster):
    client, _ = local_cluster
    with pytest.raises(BadInput, match="not more than one"):
        verify_cluster(client, scheduler_file="scheduler.json")
