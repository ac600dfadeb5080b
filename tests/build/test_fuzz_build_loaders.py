"""Fuzzing the build side's loaders against what envcheck build writes: a recipe naming a real
channel, and a lock solved for real from it, mutated; loading returns a value or raises BadInput
with one line (tests/support/fuzz.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.lockfile.read import read_built_lock as read_build_lock
from envcheck.resolve.recipe import load_recipe
from tests.support.fuzz import (
    EXAMPLES,
    FUZZ,
    expect_value_or_bad_input,
    mutate,
    scratch_fixture,  # noqa: F401  (the fixture)
    values,
)

RECIPE_KEYS = ["name", "description", "channels", "platforms", "system", "dependencies",
               "pip", "exclude", "targets", "notes"]  # fmt: skip


def _good_recipe(channel: str) -> dict[str, Any]:
    return {
        "name": "demo",
        "channels": [channel],
        "platforms": ["linux-64"],
        "system": {"cuda": "11.8", "glibc": "2.17"},
        "dependencies": ["python >=3.9", "dask"],
        "pip": ["rich>=13"],
        "exclude": [{"name": "cugraph", "reason": "conflicts"}],
    }


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.support.channel import demo_channel

    return demo_channel(tmp_path_factory.mktemp("fuzz") / "ch")


@FUZZ
@given(data=st.data())
def test_recipe_loader_survives_mutated_recipes(
    scratch: Path, channel: str, data: st.DataObject
) -> None:
    doc = _good_recipe(channel)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        key = data.draw(st.sampled_from([*RECIPE_KEYS, "colour"]), label="key")
        if data.draw(st.booleans(), label="delete") and key in doc:
            del doc[key]
        else:
            doc[key] = data.draw(values, label=key)
    p = scratch / "r.yaml"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True))
    expect_value_or_bad_input(load_recipe, p)


@pytest.fixture(scope="module")
def envcheck_lock(tmp_path_factory: pytest.TempPathFactory, channel: str) -> dict[str, Any]:
    """A lock written by envcheck build (its metadata included), solved for real."""
    from envcheck.cli import main
    from tests.support.channel import write_recipe

    d = tmp_path_factory.mktemp("lock")
    r = write_recipe(d, channel, "[python=3.9, dask-cuda]")
    assert main(["build", str(r), "--out", str(d / "locks"), "--quiet"]) == 0
    return yaml.safe_load((d / "locks" / "demo.conda-lock.yml").read_text())


@settings(FUZZ, max_examples=EXAMPLES or 30)
@given(data=st.data())
def test_build_lock_reader_survives_mutated_locks(
    scratch: Path, envcheck_lock: dict[str, Any], data: st.DataObject
) -> None:
    import copy

    doc = mutate(copy.deepcopy(envcheck_lock), data)
    p = scratch / "x.conda-lock.yml"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True))
    expect_value_or_bad_input(read_build_lock, p)
