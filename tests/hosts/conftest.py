"""Hosts as network namespaces (tests/hosts/netns.py), fresh for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hosts.netns import Hosts, Unavailable, namespaced_hosts


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    try:
        with namespaced_hosts("sched", "hostA", "hostB", "client") as h:
            yield h
    except Unavailable as e:
        pytest.skip(str(e))
