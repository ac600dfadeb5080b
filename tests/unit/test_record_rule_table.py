"""docs/recipes.md's rule table: every example in it is run through the lint on the shipped
record and gives its row's rule at its row's severity (a "passes" example gives none), and the
table is the rendering of those examples (scripts/record/rapids_rule_table.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from envcheck.resolve.record.lint import lint
from envcheck.resolve.record.table import load_record

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts" / "record"))
rules = importlib.import_module("rapids_rule_table")

CASES = [(row, ex) for row in rules.ROWS for ex in row.examples]


@pytest.mark.parametrize(("row", "example"), CASES, ids=[e.words[:60] for _, e in CASES])
def test_each_example_gives_its_rows_rule_and_severity(row, example):
    found = lint(list(example.deps), dict(example.system), load_record(), pip=list(example.pip),
                 platforms=list(example.platforms))  # fmt: skip
    mine = [f for f in found if f.rule == row.rule and f.severity == row.severity]
    if example.passes:
        assert mine == [] and not [f for f in found if f.severity == "error"], found
    else:
        assert mine, [f.line() for f in found]
        # what the record says is cited; two entries of the recipe at odds need no record line
        at_odds = ("rapids.not-in-record", "rapids.unknown-release", "rapids.one-release",
                   "rapids.build")  # fmt: skip
        assert row.rule in at_odds or all(f.sources for f in mine), [f.line() for f in mine]


def test_the_docs_rule_table_is_the_examples():
    doc = rules.DOC.read_text()
    assert rules.with_table(doc, rules.render()) == doc, (
        "docs/recipes.md: run python scripts/record/rapids_rule_table.py"
    )
