"""Fuzzing the loaders: whatever a recipe or lock file holds, loading it returns a
value or raises BadInput with one line; never another exception, never a hang.

Bounded for CI: derandomized (the same examples every run) and sized to about 20 s on a 2-core
machine (most of it the verify reader: conda-lock parses with PyYAML's pure-Python loader).
ENVCHECK_FUZZ_EXAMPLES=5000 runs longer, with fresh random examples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.lockfile.read import read_lock as read_verify_lock
from envcheck.resolve.recipe import load_recipe
from tests.support.fuzz import (
    EXAMPLES,
    FUZZ,
    expect_value_or_bad_input,
    mutate,
    scratch_fixture,  # noqa: F401  (the fixture)
    )

DATA = Path(__file__).parents[1] / "data"


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
    expect_value_or_bad_input(load_recipe, p)


def _lock_doc(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / name).read_text())


@settings(FUZZ, max_examples=EXAMPLES or 12)
@given(data=st.data())
def test_verify_lock_reader_survives_mutated_locks(
    scratch: Path, data: st.DataObject
) -> None:
    doc = mutate(_lock_doc("pangeo-pytorch-excerpt.conda-lock.yml"), data)
    p = scratch / "x.conda-lock.yml"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True))
    expect_value_or_bad_input(read_verify_lock, p)


@pytest.mark.slow
@settings(FUZZ, max_examples=EXAMPLES or 60)
@given(data=st.data())
def test_lock_document_loader_reads_mutated_locks_as_yaml_does(
    data: st.DataObject,
) -> None:
    """The line reader for conda-lock's layout answers as PyYAML does, or leaves it to it."""
    from envcheck.lockfile.document import fast_document, load_document

    doc = mutate(_lock_doc("pangeo-pytorch-excerpt.conda-lock.yml"), data)
    sort_keys = data.draw(st.booleans(), label="sort_keys")  # conda-lock's old and new order
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=sort_keys)
    expected = yaml.safe_dump(yaml.safe_load(text))  # dumped: NaN equals NaN
    assert yaml.safe_dump(load_document(text)) == expected
    fast = fast_document(text)
    if fast is not None:
        assert yaml.safe_dump(fast) == expected
