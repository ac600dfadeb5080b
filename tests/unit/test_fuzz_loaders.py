"""Fuzzing the loaders: whatever a recipe or lock file holds, loading it returns a
value or raises BadInput with one line; never another exception, never a hang.

Bounded for CI: derandomized (the same examples every run) and sized to about 20 s on a 2-core
machine (most of it the verify reader: conda-lock parses with PyYAML's pure-Python loader).
ENVCHECK_FUZZ_EXAMPLES=5000 runs longer, with fresh random examples.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcheck.errors import BadInput
from envcheck.lockfile.read import read_lock as read_build_lock
from envcheck.lockfile.read import read_packages as read_verify_lock
from envcheck.resolve.recipe import load_recipe

DATA = Path(__file__).parents[1] / "data"
EXAMPLES = int(os.environ.get("ENVCHECK_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 60,
    deadline=None,
    derandomize=not EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- values: what YAML can hold, nested a little -------------------------------------------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["python", "python >=3.9", "11.8", "2.17", "eleven", "", "*", "=", "linux-64"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
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


def _expect_value_or_bad_input(load: Any, path: Path) -> None:
    try:
        load(path)
    except BadInput as e:
        assert "\n" not in e.message, e.message
        assert e.message.strip(), "an empty message"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per test module; each example overwrites its one file there."""
    return tmp_path_factory.mktemp("fuzz-files")


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
    _expect_value_or_bad_input(load_recipe, p)


@settings(FUZZ, max_examples=EXAMPLES or 150)
@given(raw=st.one_of(st.binary(max_size=400), st.text(max_size=400)))
def test_recipe_loader_survives_arbitrary_bytes(
    scratch: Path, raw: bytes | str
) -> None:
    p = scratch / "r.yaml"
    if isinstance(raw, str):
        p.write_text(raw)
    else:
        p.write_bytes(raw)
    _expect_value_or_bad_input(load_recipe, p)


def _lock_doc(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / name).read_text())


def _mutate(doc: Any, data: st.DataObject) -> Any:
    """Replace one value somewhere in the document (a path chosen by hypothesis)."""
    node = doc
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans(), label="deeper"):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        k = data.draw(st.sampled_from(keys), label="at")
        child = node[k]
        if not isinstance(child, (dict, list)) or not child:
            node[k] = data.draw(values, label="value")
            return doc
        node = child
    if isinstance(node, dict) and node:
        k = data.draw(st.sampled_from(list(node)), label="key")
        node[k] = data.draw(values, label="value")
    elif isinstance(node, list) and node:
        node[data.draw(st.integers(0, len(node) - 1))] = data.draw(values, label="value")
    return doc


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

    doc = _mutate(copy.deepcopy(envcheck_lock), data)
    p = scratch / "x.conda-lock.yml"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True))
    _expect_value_or_bad_input(read_build_lock, p)


@settings(FUZZ, max_examples=EXAMPLES or 12)
@given(data=st.data())
def test_verify_lock_reader_survives_mutated_locks(
    scratch: Path, data: st.DataObject
) -> None:
    doc = _mutate(_lock_doc("pangeo-pytorch-excerpt.conda-lock.yml"), data)
    p = scratch / "x.conda-lock.yml"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True))
    _expect_value_or_bad_input(read_verify_lock, p)


@settings(FUZZ, max_examples=EXAMPLES or 60)
@given(data=st.data())
def test_lock_document_loader_reads_mutated_locks_as_yaml_does(
    data: st.DataObject,
) -> None:
    """The line reader for conda-lock's layout answers as PyYAML does, or leaves it to it."""
    from envcheck.lockfile.read import fast_document, load_document

    doc = _mutate(_lock_doc("pangeo-pytorch-excerpt.conda-lock.yml"), data)
    sort_keys = data.draw(st.booleans(), label="sort_keys")  # conda-lock's old and new order
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=sort_keys)
    expected = yaml.safe_dump(yaml.safe_load(text))  # dumped: NaN equals NaN
    assert yaml.safe_dump(load_document(text)) == expected
    fast = fast_document(text)
    if fast is not None:
        assert yaml.safe_dump(fast) == expected
