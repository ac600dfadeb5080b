"""A real LocalCluster of two worker processes with their gathered facts, for smoke/bench tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from envcheck.verify.facts import NodeFacts


@pytest.fixture(scope="module", name="local_cluster")
def local_cluster_fixture() -> Iterator[tuple[object, dict[str, NodeFacts]]]:
    from distributed import Client, LocalCluster

    from envcheck.verify.gather import gather_facts

    # Two threads a worker: a test leaves a task sleeping past its timeout on one of them.
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client, dict(gather_facts(client, 30).workers)
