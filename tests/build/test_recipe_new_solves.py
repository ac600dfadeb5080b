"""recipe new for every release in the record and both OSes: the recipe lints clean and solves
on a channel shaped by the record (tests/support/rapids_channel.py)."""

from __future__ import annotations

import re

import pytest

from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.new.pipeline import OSES, Options, compose
from envcheck.resolve.record.specs import matches
from envcheck.resolve.solve import solve_specs, virtual_packages
from envcheck.resolve.solve_recipe import exclusion_constraints
from tests.support.channel import write_channel
from tests.support.rapids_channel import RECORD, base_packages, release_packages

COVERED = sorted(RECORD.releases)
EXTRAS = ("xgboost", "ucx", "torch", "dask-sql")


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> str:
    records = {}
    for r in [*base_packages(), *(p for rel in COVERED for p in release_packages(rel))]:
        records[(r["name"], r["version"], r["build"])] = r
    return write_channel(tmp_path_factory.mktemp("record-channel"), records.values())


def _cases():
    for rel in COVERED:
        for os_ in ("el7", "el8"):
            yield rel, os_


@pytest.mark.parametrize(("rel", "os_"), list(_cases()))
def test_recipe_new_for_every_release_and_os_lints_clean_and_solves(tmp_path, channel, rel, os_):
    release = RECORD.release(rel)
    majors = release.get("cuda_majors")
    cuda = "12.8" if majors.known and "11" not in majors.value else "11.8"
    opts = Options(rapids=rel, cuda=cuda, os=os_, with_=EXTRAS, channels=(channel,))
    glibc = OSES[os_][0]
    if matches(f"<{release.get('glibc').value}", glibc):
        floor = re.escape(str(release.get("glibc").value))
        with pytest.raises(Exception, match=rf"needs glibc >= {floor}.*\(rule rapids\.glibc"):
            compose(opts)
        return
    text = compose(opts)
    path = tmp_path / "r.yaml"
    path.write_text(text)
    recipe = load_recipe(path)
    assert not [f for f in lint(recipe.dependencies, recipe.system, RECORD) if f.severity == ERROR]
    # every pin line cites a source (the record, or says it is not in it)
    for line in text.split("dependencies:\n")[1].splitlines():
        if line.startswith("  - "):
            assert "# " in line, line
    vps = virtual_packages(recipe.system, "linux-64")
    solved = solve_specs(
        recipe.dependencies, [channel], "linux-64", vps, constraints=exclusion_constraints(recipe)
    )
    got = {p.name: p.version for p in solved}
    assert got["cudf"] == f"{rel}.00"
    assert matches(str(release.get("dask").value).replace("==", "=="), got["dask"])
    assert got["python"].startswith(release.get("python").value[-1] + ".")
