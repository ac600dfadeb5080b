"""The recipes users write (tests/data/user-recipes): each lints to the verdict VERDICTS.yaml
gives it, and the findings cite the authority that verdict names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.record.lint import ERROR, WARN, lint
from envcheck.resolve.record.table import load_record

HERE = Path(__file__).resolve().parents[1] / "data" / "user-recipes"
DATA = Path(__file__).resolve().parents[1] / "data" / "rapids-record"
VERDICTS = yaml.safe_load((HERE / "VERDICTS.yaml").read_text())


def test_every_recipe_has_a_verdict_and_there_are_at_least_twelve():
    assert sorted(VERDICTS) == sorted(p.name for p in HERE.glob("*.yaml") if p.stem != "VERDICTS")
    assert len(VERDICTS) >= 12
    assert {v["verdict"] for v in VERDICTS.values()} == {"clean", "warn", "error"}


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_user_recipe_lints_to_its_verdict_citing_its_source(name):
    want = VERDICTS[name]
    recipe = load_recipe(HERE / name)
    found = lint(recipe.dependencies, recipe.system, load_record(), pip=recipe.pip)
    loud = [f for f in found if f.severity in (ERROR, WARN)]
    assert [f.rule for f in loud] == want["rules"], [f.line() for f in loud]
    verdict = "error" if any(f.severity == ERROR for f in loud) else "warn" if loud else "clean"
    assert verdict == want["verdict"]
    assert (DATA / want["source"]).exists(), want["source"]
    if loud:
        cited = {s.rsplit(":", 1)[0] for f in loud for s in f.sources}
        assert want["source"] in cited, cited
