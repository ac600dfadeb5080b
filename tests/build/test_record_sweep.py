"""`recipe new` over every release x driver CUDA x toolkit x Python x OS of the record, and the
lint on what it writes: they agree (every accepted recipe lints clean), every refusal names its
rule and record lines that exist in tests/data, and docs/recipes.md's table is this sweep's."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts" / "record"))
sweep_mod = importlib.import_module("rapids_sweep")

DATA = Path(__file__).resolve().parents[1] / "data" / "rapids-record"

# one xdist worker runs the module: the sweep (a minute of CPU) is made once, not per worker
pytestmark = pytest.mark.xdist_group("record-sweep")


@pytest.fixture(scope="module")
def cases():
    return sweep_mod.sweep()


def test_recipe_new_and_the_lint_agree_on_every_combination(cases):
    assert len(cases) > 4000
    accepted = [c for c in cases if not c.rule]
    assert accepted and all(not c.lint_errors for c in accepted), [
        (c.args, c.lint_errors[0]) for c in accepted if c.lint_errors
    ][:3]


def test_every_refusal_cites_lines_of_the_data(cases):
    for c in (c for c in cases if c.rule):
        assert c.rule.startswith("rapids.") and c.sources, (c.args, c.reason)
        for pointer in c.sources:
            path, line = pointer.rsplit(":", 1)
            lines = (DATA / path).read_text().splitlines()
            assert 1 <= int(line) <= len(lines), (c.args, pointer)


def test_a_newer_driver_is_never_refused_for_its_cuda(cases):
    # a driver runs every older major's toolkit: whatever a 12.9 driver gets, 13.x gets too
    by = {(c.rapids, c.os, c.python, c.toolkit, c.cuda): c for c in cases}
    for (rel, os_, py, tk, cuda), c in by.items():
        newer = by.get((rel, os_, py, tk, "13.1"))
        if not c.rule and cuda.startswith("12.") and newer is not None:
            assert not newer.rule or newer.rule != "rapids.cuda", newer.args
    # the refusal line of each kind of refusal: no hint asks to state another driver
    from envcheck.errors import EnvcheckError
    from envcheck.resolve.record.new.options import Options
    from envcheck.resolve.record.new.pipeline import compose

    for c in sweep_mod.examples(cases).values():
        opts = Options(rapids=c.rapids, cuda=c.cuda, os=c.os, python=c.python, toolkit=c.toolkit)
        with pytest.raises(EnvcheckError) as refused:
            compose(opts)
        assert f"(rule {c.rule};" in str(refused.value)
        assert not re.search(r"try [^(]*--cuda", str(refused.value)), str(refused.value)


def test_the_docs_table_is_this_sweeps(cases):
    doc = sweep_mod.DOC.read_text()
    assert sweep_mod.with_table(doc, sweep_mod.table(cases)) == doc, (
        "docs/recipes.md: run python scripts/record/rapids_sweep.py"
    )
