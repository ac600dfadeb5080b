"""envcheck's linear toposort gives conda-lock's order exactly (real locks, random graphs)."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from envcheck.lockfile.condalock import parse_lockfile
from envcheck.lockfile.toposort import level_order, toposorted

DATA = Path(__file__).parents[1] / "data"


def conda_lock_order(package: list) -> list:
    from conda_lock.lockfile.v2prelim.models import Lockfile

    return Lockfile._toposort(package)


@pytest.mark.parametrize(
    "lock",
    [
        "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml",
        "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml",
        "pangeo-pytorch-excerpt.conda-lock.yml",
    ],
)
def test_real_locks_come_out_in_conda_locks_order(lock: str) -> None:
    package = list(parse_lockfile(DATA / lock).package)
    random.Random(lock).shuffle(package)
    want = [(d.platform, d.manager, d.name) for d in conda_lock_order(package)]
    assert [(d.platform, d.manager, d.name) for d in toposorted(package)] == want


def _pkg(name: str, deps: list[str], manager: str = "conda", platform: str = "linux-64"):
    return SimpleNamespace(
        name=name, dependencies=dict.fromkeys(deps, ""), manager=manager, platform=platform
    )


@pytest.mark.parametrize("seed", range(30))
def test_random_graphs_with_cycles_self_loops_and_outside_names(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(rng.randint(1, 60))] + ["python", "pip"]
    package = []
    for i, n in enumerate(names):
        # even seeds: acyclic (the linear path); odd seeds: cycles too (conda's own rule)
        pool = (names[:i] if seed % 2 == 0 else names) + ["__glibc", "outside"]
        deps = rng.sample(pool, min(len(pool), rng.randint(0, 4)))
        where = rng.choice(["linux-64", "osx-64"])
        package.append(_pkg(n, deps, rng.choice(["conda", "pip"]), where))
    assert [d.name for d in toposorted(package)] == [d.name for d in conda_lock_order(package)]


def test_a_chain_is_one_pass_and_a_cycle_is_none() -> None:
    chain = {f"p{i:05d}": {f"p{i - 1:05d}"} if i else set() for i in range(3000)}
    assert level_order(chain) == sorted(chain)
    assert level_order({"a": {"b"}, "b": {"a"}}) is None
    # python's dependency on pip is dropped, as conda does
    assert level_order({"python": {"pip"}, "pip": {"python"}}) == ["python", "pip"]
