"""Real LocalClusters of worker processes for tests: `local_client` starts one the way every
test does; the `local_cluster` fixture is two workers with their gathered facts."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from envcheck.verify.facts import NodeFacts


@contextmanager
def local_client(
    n_workers: int = 2,
    *,
    threads_per_worker: int = 1,
    silence_logs: int = logging.ERROR,
    **cluster_kwargs: Any,
) -> Iterator[Any]:
    """A Client to a LocalCluster of worker processes on 127.0.0.1; both closed after.

    No dashboard, and the scheduler's HTTP routes on a free port (not 8787): tests run side
    by side. `cluster_kwargs` go to LocalCluster as they are (env, blocked_handlers, ...).
    """
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},
            silence_logs=silence_logs,
            **cluster_kwargs,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture(scope="module", name="local_cluster")
def local_cluster_fixture() -> Iterator[tuple[object, dict[str, NodeFacts]]]:
    from envcheck.verify.cluster.gather import gather_facts

    # Two threads a worker: a test leaves a task sleeping past its timeout on one of them.
    with local_client(2, threads_per_worker=2) as client:
        yield client, dict(gather_facts(client, 30).workers)
