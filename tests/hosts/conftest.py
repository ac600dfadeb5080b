"""Hosts as network namespaces (tests/hosts/netns.py), fresh for each test; the UCX env."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator

import pytest

from tests.hosts.netns import Hosts, Unavailable, namespaced_hosts
from tests.support.old_envs import EnvSpec, OldEnv, build_env


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    try:
        with namespaced_hosts("sched", "hostA", "hostB", "client") as h:
            yield h
    except Unavailable as e:
        # tests/conftest.py checked root, ip and unshare: what is left is a real failure
        pytest.fail(f"namespaced hosts did not start: {e}", pytrace=False)


# distributed-ucxx pins distributed (through rapids-dask-dependency) to another release than
# the test environment's, so UCX runs from an environment of its own: ucxx, libucx (its
# ucx_info included), distributed-ucxx and what they pin, plus envcheck from this checkout.
# `import ucxx` needs no CUDA driver; UCX_TLS=tcp,self keeps UCX on its TCP transport.
UCX_ENV = EnvSpec(
    "ucx", f"{sys.version_info[0]}.{sys.version_info[1]}",
    ("ucxx-cu12==0.52.*", "distributed-ucxx-cu12==0.52.*"),
    "distributed-ucxx 0.52 pins distributed 2026.7.1 through rapids-dask-dependency",
)


@pytest.fixture(scope="session")
def ucx_env() -> Iterator[OldEnv]:
    env = build_env(UCX_ENV)  # about 4 s with uv on this machine, even with an empty uv cache
    yield env
    if not os.environ.get("ENVCHECK_TEST_ENV_CACHE"):  # ~390 MB: not left behind in /tmp
        shutil.rmtree(env.prefix, ignore_errors=True)
        with contextlib.suppress(OSError):  # the session's directory, when nothing else is in it
            env.prefix.parent.rmdir()
