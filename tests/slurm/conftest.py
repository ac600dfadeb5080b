"""One real single-node Slurm for the whole session (tests/slurm/cluster.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.slurm.cluster import Slurm, Unavailable, single_node_slurm


@pytest.fixture(scope="session")
def slurm() -> Iterator[Slurm]:
    try:
        with single_node_slurm(gpus=2) as s:
            yield s
    except Unavailable as e:
        # tests/conftest.py checked root and the tools: what is left is a real failure
        pytest.fail(f"Slurm did not start: {e}", pytrace=False)
