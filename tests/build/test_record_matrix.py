"""Every (release, Python, CUDA major, OS) the RAPIDS record allows yields a `recipe new` recipe
that lints clean and names only RAPIDS packages that exist for that release; every OS below the
release's glibc floor is refused; libraries that ended are left out and refused by name.

What exists is read from the snapshots in tests/data/rapids-record, not from the record: the
`rapids` meta-package of each conda-era release (integration/<rel>/.../rapids/meta.yaml; cudf's
own dask-cudf recipe once the meta-package stopped naming it) and
pypi.org's file lists (pypi/files/<project>.tsv) of 24.06 on.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.errors import Unsolvable
from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.new.options import OSES, Options
from envcheck.resolve.record.new.pipeline import LIBS_OLD, compose
from envcheck.resolve.record.table import load_record, release_key

DATA = Path(__file__).resolve().parents[1] / "data" / "rapids-record"
RECORD = load_record()


def _v(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def _on_pypi(name: str, rel: str) -> bool | None:
    """Whether pypi.org has files of ``name`` for RAPIDS ``rel`` (None: no list kept)."""
    for project in (f"{name}-cu12", name):
        path = DATA / "pypi" / "files" / f"{project}.tsv"
        if path.exists():
            yy, mm = (int(x) for x in rel.split("."))
            rows = [ln.split("\t")[0] for ln in path.read_text().splitlines()[2:]]
            return any(re.match(rf"^{yy}\.{mm}\.\d+$", v) for v in rows)
    return None


def _in_meta_package(name: str, rel: str) -> bool:
    meta = DATA / "integration" / rel / "conda" / "recipes" / "rapids" / "meta.yaml"
    text = meta.read_text()
    if re.search(rf"^\s+-\s+{re.escape(name)}\s", text, re.M):
        return True
    # dask-cudf left the meta-package in 23.08; cudf's repository still builds it
    own = DATA / "cudf" / rel / "conda" / "recipes" / "dask-cudf" / "meta.yaml"
    return name == "dask-cudf" and ("dask_cudf" in text or own.exists())


def exists(name: str, rel: str) -> bool:
    integ = DATA / "integration" / rel  # a conda-era release's: with its build matrix
    if (integ / "ci").exists() or (integ / ".github").exists():
        return _in_meta_package(name, rel)
    found = _on_pypi(name, rel)
    assert found is not None, f"no pypi.org file list kept for {name}"
    return found


def _cuda(release, major: str) -> str:  # type: ignore[no-untyped-def]
    """A driver CUDA of that major the release allows: its newest build of it, or the floor."""
    builds = release.get("cuda_builds")
    mine = [b for b in (builds.value if builds.known else []) if b.split(".")[0] == major]
    if mine:
        return mine[-1]
    floor = RECORD.floors["cuda"].value
    late = release_key(release.version) >= release_key(floor["since"])
    return floor["cuda"] if late and floor["cuda"].split(".")[0] == major else f"{major}.0"


def _pythons(release) -> list[str]:  # type: ignore[no-untyped-def]
    conda = release.get("python_conda")
    return list((conda if conda.known else release.get("python")).value)


def _cases():
    for rel in sorted(RECORD.releases, key=release_key):
        release = RECORD.release(rel)
        for major in release.get("cuda_majors").value:
            yield rel, major


@pytest.mark.parametrize(("rel", "major"), list(_cases()))
def test_every_allowed_combination_yields_a_clean_recipe_of_existing_packages(rel, major, tmp_path):
    release = RECORD.release(rel)
    floor = release.get("glibc").value
    cuda = _cuda(release, major)
    allowed = [os_ for os_, (glibc, _) in OSES.items() if _v(glibc) >= _v(floor)]
    refused = [os_ for os_ in OSES if os_ not in allowed]
    assert allowed and "el8" in allowed
    for os_ in allowed:
        for py in _pythons(release):
            text = compose(Options(rapids=rel, cuda=cuda, os=os_, python=py))
            path = tmp_path / f"{rel}-{major}-{os_}-{py}.yaml"
            path.write_text(text)
            recipe = load_recipe(path)
            found = lint(recipe.dependencies, recipe.system, RECORD, pip=recipe.pip)
            assert [f.line() for f in found if f.severity == ERROR] == [], path.name
            assert f"python={py}" in recipe.dependencies
            named = [d.split("=")[0] for d in recipe.dependencies if d.endswith(f"={rel}")]
            assert named, text
            for name in named:
                assert name in LIBS_OLD
                assert exists(name, rel), f"{name} {rel} is not in the snapshot: {path.name}"
    for os_ in refused:
        with pytest.raises(Unsolvable, match=r"rapids\.glibc"):
            compose(Options(rapids=rel, cuda=cuda, os=os_))


def test_ended_libraries_are_left_out_and_refused_with_their_last_release():
    cuspatial = RECORD.libraries["cuspatial"]
    assert cuspatial.value["last"] == "25.04" and cuspatial.value["ended"]
    assert RECORD.libraries["cuxfilter"].value["last"] == "26.06"
    assert not RECORD.libraries["cudf"].value["ended"]
    text = compose(Options(rapids="26.10", cuda="12.8", os="el8"))
    assert "cuspatial" not in text and "cuxfilter" not in text and "cudf=26.10" in text
    assert "cuspatial=25.04" in compose(Options(rapids="25.04", cuda="12.8", os="el8"))
    assert "cuxfilter=26.06" in compose(Options(rapids="26.06", cuda="12.8", os="el8"))
    with pytest.raises(Unsolvable, match=r"cuspatial has no RAPIDS 26\.10: its last release is "
                       r"25\.04"):  # fmt: skip
        compose(Options(rapids="26.10", cuda="12.8", os="el8", with_=("cuspatial",)))
    with pytest.raises(Unsolvable, match=r"cuxfilter has no RAPIDS 26\.08"):
        compose(Options(rapids="26.08", cuda="12.8", os="el8", libs=("cudf", "cuxfilter")))
    found = lint(["cudf=26.10", "cuspatial"], {"glibc": "2.28"}, RECORD)
    assert [f.rule for f in found if f.severity == ERROR] == ["rapids.ended"]
    assert "pypi/files/cuspatial-cu12.tsv:" in found[0].sources[0]
