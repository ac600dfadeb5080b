"""Conflict diagnosis: bisection logic alone, then real solves against generated worlds."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import pytest

from envcheck.resolve.conflicts import (
    NothingToDiagnose,
    SolveOutcome,
    diagnose,
    explain,
    minimal_conflict,
)
from envcheck.resolve.solve import SolveFailed, solve_specs, virtual_packages
from tests.support.channel import pkg, write_channel
from tests.support.worlds import NEUTRAL, RELEASES, write_world

EL7 = {"cuda": "11.5", "glibc": "2.17"}


def bound(n: int) -> int:
    return 2 * math.ceil(math.log2(n)) + 2


# --- the bisection alone (a predicate stands in for the solver) ----------------------------


def _counting(culprits: set[str]):
    probes: list[frozenset[str]] = []

    def fails(specs: Sequence[str]) -> bool:
        probes.append(frozenset(specs))
        return culprits <= set(specs)

    return fails, probes


def test_bisection_finds_every_pair_among_30_within_the_bound():
    entries = [f"pkg{i}" for i in range(30)]
    worst = 0
    for a, b in itertools.combinations(range(30), 2):
        fails, probes = _counting({entries[a], entries[b]})
        assert minimal_conflict(entries, fails) == [entries[a], entries[b]]
        worst = max(worst, len(set(probes)))
    # diagnose adds one solve of the whole recipe before bisecting
    assert worst + 1 <= bound(30)


def test_bisection_finds_a_single_entry_and_a_triple():
    entries = [f"pkg{i}" for i in range(30)]
    for i in range(30):
        fails, _ = _counting({entries[i]})
        assert minimal_conflict(entries, fails) == [entries[i]]
    fails, _ = _counting({"pkg3", "pkg17", "pkg29"})
    assert minimal_conflict(entries, fails) == ["pkg3", "pkg17", "pkg29"]


def test_bisection_result_is_minimal_when_several_conflicts_exist():
    entries = [f"pkg{i}" for i in range(12)]

    def fails(specs: Sequence[str]) -> bool:
        s = set(specs)
        return {"pkg2", "pkg9"} <= s or {"pkg4", "pkg5", "pkg6"} <= s

    found = minimal_conflict(entries, fails)
    assert fails(found)
    assert all(not fails([e for e in found if e != drop]) for drop in found)


def test_unknown_message_shape_still_gives_a_reason():
    reasons = explain(["x"], "Cannot solve the request because of: a shape never seen\n", {})
    assert reasons == ["Cannot solve the request because of: a shape never seen"]


# --- real solves against generated worlds ---------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> str:
    return write_world(tmp_path_factory.mktemp("world"))


def solver(url: str, system: Mapping[str, str]):
    vps = virtual_packages(system, "linux-64")

    def solve(specs: Sequence[str]) -> SolveOutcome:
        try:
            solve_specs(specs, [url], "linux-64", vps)
        except SolveFailed as e:
            return SolveOutcome(False, e.message)
        return SolveOutcome(True)

    return solve, vps


@pytest.mark.slow
@pytest.mark.parametrize("guided", [True, False])
def test_cuml_cugraph_clash_among_30_entries(world, guided):
    entries = [*NEUTRAL[:9], "cuml=22.08", *NEUTRAL[9:], "cugraph=23.04"]
    assert len(entries) == 30
    solve, vps = solver(world, EL7)
    d = diagnose(entries, solve, virtual_packages=vps, guided=guided)
    assert d.entries == ("cuml=22.08", "cugraph=23.04")
    assert d.solves <= bound(30)
    text = " ".join(d.reasons)
    # the real pins of the two releases (dask or distributed: the solver picks which it reports)
    for release in ("22.08", "23.04"):
        r = RELEASES[release]
        assert f"dask =={r.dask}" in text or f"distributed =={r.distributed}" in text, text
    assert "cuml 22.8.0 requires" in text and "cugraph 23.4.0 requires" in text
    assert "cannot be installed together" in d.summary()
    assert not solve(list(d.entries)).ok
    assert all(solve([e]).ok for e in d.entries)  # minimal: each alone installs


@pytest.mark.slow
def test_entry_clashing_with_a_recipe_pin_through_a_chain(world):
    solve, vps = solver(world, EL7)
    d = diagnose(
        ["python=3.9", "cuxfilter=22.08", "numpy", "dask=2023.3.2"], solve, virtual_packages=vps
    )
    assert d.entries == ("cuxfilter=22.08", "dask=2023.3.2")
    assert any(
        r.startswith("cuxfilter 22.8.0 requires")
        and "dask ==2022.7.1" in r
        and r.endswith("the recipe pins dask=2023.3.2")
        for r in d.reasons
    ), d.reasons


@pytest.mark.slow
def test_nonexistent_version_is_a_single_culprit(world):
    solve, vps = solver(world, EL7)
    d = diagnose([*NEUTRAL[:10], "dask=1999.1", *NEUTRAL[10:]], solve, virtual_packages=vps)
    assert d.entries == ("dask=1999.1",)
    assert d.reasons == ("no package in the channels matches 'dask=1999.1'",)
    assert "recipe entry 'dask=1999.1' cannot be installed" in d.summary()


@pytest.mark.slow
def test_glibc_of_the_target_system_is_named(world):
    solve, vps = solver(world, EL7)  # CentOS 7: glibc 2.17
    d = diagnose(["python=3.12", "numpy", "cudf=26.10", "pandas"], solve, virtual_packages=vps)
    assert d.entries == ("cudf=26.10",)
    assert any(
        "requires __glibc >=2.28" in r and "provides __glibc 2.17" in r for r in d.reasons
    ), d.reasons


@pytest.mark.slow
def test_solvable_specs_have_nothing_to_diagnose(world):
    solve, _ = solver(world, EL7)
    with pytest.raises(NothingToDiagnose):
        diagnose(["python=3.9", "cudf=22.08", "dask-cuda=22.08"], solve)


@pytest.mark.slow
def test_a_run_constraint_clashing_with_a_recipe_pin_is_named(tmp_path):
    # dask-sql releases constrain the Dask they work with without depending on a version
    url = write_channel(
        tmp_path,
        [
            pkg("python", "3.9.13"),
            pkg("dask", "2022.7.1", ["python"]),
            pkg("dask", "2023.3.2", ["python"]),
            pkg("dask-sql", "2022.8.0", ["python"], constrains=["dask <=2022.8.1"]),
        ],
    )
    solve, vps = solver(url, EL7)
    d = diagnose(["python=3.9", "dask-sql", "dask=2023.3.2"], solve, virtual_packages=vps)
    assert d.entries == ("dask-sql", "dask=2023.3.2")
    assert d.reasons == (
        "dask-sql 2022.8.0 constrains dask <=2022.8.1; the recipe pins dask=2023.3.2",
    )
