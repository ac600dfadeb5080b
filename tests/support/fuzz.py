"""What the loader fuzz tests share: hypothesis settings bounded for CI, YAML-shaped values, one
mutation of a document, and the one outcome a loader may have besides a value."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from envcheck.errors import BadInput

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


def expect_value_or_bad_input(load: Any, path: Path) -> None:
    try:
        load(path)
    except BadInput as e:
        assert "\n" not in e.message, e.message
        assert e.message.strip(), "an empty message"


@pytest.fixture(scope="module", name="scratch")
def scratch_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per test module; each example overwrites its one file there."""
    return tmp_path_factory.mktemp("fuzz-files")


def mutate(doc: Any, data: st.DataObject) -> Any:
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
