"""The RAPIDS release record: rebuilt from tests/data by its script, and the lint that uses it."""

from __future__ import annotations

import importlib
import re
import sys
import time
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.resolve.record.lint import ERROR, INFO, WARN, lint
from envcheck.resolve.record.table import load_record, parse_record
from tests.support.channel import write_recipe
from tests.support.deadlines import HANG

DATA = Path(__file__).parents[1] / "data" / "rapids-record"
# the generator is a script beside the package, not part of it: it reads tests/data
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts" / "record"))
gen = importlib.import_module("rapids_record")
EL7 = {"cuda": "11.5", "glibc": "2.17"}
SEED = [
    "rapids=22.08", "python=3.9", "cudatoolkit=11.0",
    "dask-sql", "dash", "graphistry", "pycaret", "xarray-spatial",
]  # fmt: skip


def _line(pointer: str) -> str:
    path, n = pointer.rsplit(":", 1)
    if n == "name":  # the fact is in the file's name (a wheel's platform tag)
        assert (DATA / path).exists()
        return path
    return (DATA / path).read_text().splitlines()[int(n) - 1]


def test_rebuilding_the_record_from_tests_data_gives_the_shipped_table():
    assert gen.render(gen.build_record(DATA)) == gen.TABLE_TEXT()
    assert gen.main(["--check"]) == 0


def test_spot_values_match_the_raw_files_they_point_to():
    rec = load_record()
    d2208 = rec.release("22.08").get("dask")
    assert d2208.value == "==2022.7.1"
    assert "'==2022.7.1'" in _line(d2208.sources[0])
    assert d2208.sources[0].startswith("integration/22.08/conda/recipes/versions.yaml:")
    dist = rec.release("23.04").get("distributed")
    assert dist.value == "==2023.3.2.1" and "'==2023.3.2.1'" in _line(dist.sources[0])
    # every known value of every release points at lines that exist and name it
    for release in rec.releases.values():
        for field, v in release.facts.items():
            if not v.known:
                assert not v.sources and v.note, (release.version, field)
                continue
            assert v.sources, (release.version, field)
            for p in v.sources:
                if "(https://" in p:  # a published notice, cited by its URL
                    continue
                assert _line(p).strip(), p
                assert p.rsplit(":", 1)[0] in rec.sources, p
    # after 23.06 the dask pin lives in dask-cuda, then in rapids-dask-dependency
    d2310 = rec.release("23.10").get("dask")
    assert d2310.value == "==2023.9.2" and any(
        "dask-cuda/23.10/pyproject.toml" in s for s in d2310.sources
    )
    d2404 = rec.release("24.04").get("dask")
    assert d2404.value == "==2024.1.1"
    assert "dask ==2024.1.1" in _line(d2404.sources[-1])
    assert "rapids-dask-dependency==24.4.*" in _line(d2404.sources[1])
    assert rec.release("22.08").get("python").value == ["3.8", "3.9"]
    assert rec.release("24.04").get("cuda_majors").value == ["11", "12"]
    assert rec.release("23.08").get("pandas").value == "unknown"  # left versions.yaml, not guessed
    assert rec.release("24.06").get("numpy").value == "unknown"  # no cudf-cu12 24.06 on PyPI


def test_the_shipped_table_agrees_with_the_pypi_wheel_metadata():
    # dask-cuda 24.4.0 requires rapids-dask-dependency 24.4.*, whose 24.4.1 wheel pins dask
    pypi = Path(__file__).parents[1] / "data" / "pypi"
    meta = (pypi / "rapids_dask_dependency-24.4.1-py3-none-any.METADATA").read_text()
    r = load_record().release("24.04")
    assert f"Requires-Dist: dask {r.get('dask').value}" in meta
    assert f"Requires-Dist: distributed {r.get('distributed').value}" in meta
    cuda = (pypi / "dask_cuda-24.4.0-py3-none-any.METADATA").read_text()
    assert f"ucx-py =={r.get('ucx-py').value}" in cuda
    for py in r.get("python").value:
        assert f"Programming Language :: Python :: {py}" in cuda


def test_a_damaged_table_is_refused():
    with pytest.raises(ValueError, match="schema"):
        parse_record({"schema": "other/9", "releases": {}})


def _rules(deps, system=EL7):
    return {(f.rule, f.severity) for f in lint(deps, system, load_record())}


@pytest.mark.parametrize(
    ("deps", "rule", "source"),
    [
        (["rapids=22.08", "dask=2023.1"], "rapids.pin", "22.08/conda/recipes/versions.yaml:54"),
        (["dask-cuda=22.08", "dask-cudf=22.10"], "rapids.one-release", "22.10/conda/recipes"),
        (["rapids=23.04", "python=3.9"], "rapids.python", "23.04/ci/axis/release.yaml"),
        (["cudf=22.08", "cudatoolkit=12.0"], "rapids.cuda", "22.08/ci/axis/release.yaml"),
        (["cudf=22.08", "numpy>=1.24"], "rapids.range", "cudf/22.08/conda/recipes/cudf/meta.yaml"),
        (["cuml=22.08", "numpy>=1.24"], "rapids.range", "22.08/conda/recipes/versions.yaml"),
        (["cudf=24.06", "python=3.10"], "rapids.glibc", "docs/main/_notices/rsn0037.md:29"),
        (["rapids=23.04", "distributed==2023.3.2"], "rapids.pin", "23.04/conda/recipes/versions"),
    ],
)
def test_lint_catches_each_contradiction_with_its_rule_and_source(deps, rule, source):
    found = [f for f in lint(deps, EL7, load_record()) if f.severity == ERROR]
    assert [f.rule for f in found] == [rule]
    assert any(source in s for s in found[0].sources), found[0].sources


def test_lint_passes_pins_the_record_agrees_with():
    assert (
        _rules(["cudf=23.04", "dask==2023.3.2", "distributed==2023.3.2.1", "python=3.10"]) == set()
    )
    deps = ["cudf=24.04", "cuda-version=11.8", "python=3.11", "numpy>=1.23,<2.0a0"]
    assert _rules(deps, {**EL7, "cuda": "11.8"}) == set()
    # 26.10 is known from its PyPI wheels only: what they say is checked
    assert _rules(["cudf=26.10", "python=3.12"], {"glibc": "2.28"}) == set()
    assert _rules(["cudf=26.10", "python=3.10"], {"glibc": "2.28"}) == {("rapids.python", ERROR)}
    assert _rules(["cudf=26.10"], EL7) == {("rapids.glibc", ERROR), ("rapids.cuda", ERROR)}
    assert _rules(["cudf=26.10"], {"cuda": "12.8", "glibc": "2.17"}) == {("rapids.glibc", ERROR)}
    # 26.12 is in no data: a warning, nothing checked
    assert _rules(["cudf=26.12"], {"glibc": "2.28"}) == {("rapids.unknown-release", WARN)}


def test_seed_case_reports_what_the_record_says():
    found = lint(SEED, EL7, load_record())
    assert not [f for f in found if f.severity == ERROR]
    (warn,) = [f for f in found if f.severity == WARN]
    assert warn.rule == "rapids.cuda-build"
    assert "built with CUDA 11.5" in warn.message and "cudatoolkit={major}.*" in warn.message
    (info,) = [f for f in found if f.severity == INFO]
    assert "dash, dask-sql, graphistry, pycaret, xarray-spatial" in info.message


def test_build_fails_fast_on_a_contradiction_without_starting_a_solver(tmp_path, capsys):
    # the channel does not exist: reaching the solver would be a different error
    missing = (tmp_path / "no-channel").as_uri()
    r = write_recipe(tmp_path, missing, "[python=3.9, rapids=22.08, 'dask=2023.1']")
    t0 = time.perf_counter()
    assert main(["build", str(r), "--out", str(tmp_path / "locks")]) == ExitCode.UNSOLVABLE
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert re.search(r"rapids\.pin: recipe entry 'dask=2023\.1' contradicts RAPIDS 22\.08", err[0])
    assert "integration/22.08/conda/recipes/versions.yaml:54" in err[0]
    assert not (tmp_path / "locks").exists()
    assert elapsed < HANG
    mixed = write_recipe(tmp_path, missing, "[dask-cuda=22.08, dask-cudf=22.10]", name="mixed")
    assert main(["build", str(mixed), "--out", str(tmp_path / "locks")]) == ExitCode.UNSOLVABLE
    assert "rapids.one-release" in capsys.readouterr().err


def test_build_reports_what_the_record_says_and_still_solves(tmp_path):
    import json

    from tests.support.channel import demo_channel

    channel = demo_channel(tmp_path / "channel")
    r = write_recipe(tmp_path, channel, "[python=3.9, dask-cuda=22.08, libzlib]")
    out = tmp_path / "r.json"
    assert main(["build", str(r), "--out", str(tmp_path / "locks"), "--json", str(out)]) == 0
    tables = {t["title"]: t for t in json.loads(out.read_text())["tables"]}
    rows = tables["RAPIDS release record"]["rows"]
    assert [row[1:3] for row in rows] == [["info", "rapids.not-in-record"]]
    assert "no rule for libzlib" in rows[0][3]


def test_pypi_releases_cite_the_kept_wheel_metadata_whose_hashes_match():
    import hashlib

    rows = (DATA / "pypi" / "METADATA.tsv").read_text().splitlines()[1:]
    assert len(rows) > 60
    for row in rows:
        name, url, _wheel_sha, meta_sha, how = row.split("\t")
        body = (DATA / "pypi" / name).read_bytes()
        assert hashlib.sha256(body).hexdigest() == meta_sha, name
        assert url.endswith(name.removesuffix(".METADATA") + ".whl") and how
    r = load_record().release("25.06")
    dask = r.get("dask")
    assert dask.value == "==2025.5.0"
    assert "rapids-dask-dependency==25.6.*" in _line(dask.sources[0])
    assert _line(dask.sources[1]) == "Requires-Dist: dask==2025.5.0"
    assert r.get("python").value == ["3.10", "3.11", "3.12", "3.13"]
    py = r.get("python_pip").sources
    assert _line(py[0]) == "Requires-Python: >=3.10"
    tags = sorted(_line(p).split("-")[2] for p in py[1:])
    assert tags == ["cp310", "cp311", "cp312", "cp313"]  # x86_64 wheels, one per Python
    # pip and conda are separate axes: CUDA 11.8 on conda (the build matrix), 12 on pypi.org
    assert r.get("cuda_majors_pip").value == ["12"]
    assert "cudf_cu12-25.6.0-" in _line(r.get("cuda_majors_pip").sources[0])
    assert r.get("cuda_majors").value == ["11", "12"]
    assert "CUDA_VER: '11.8.0'" in _line(r.get("cuda_majors").sources[0])
    assert "numba<0.62.0a0,>=0.59.1" in _line(r.get("numba").sources[0])
    # cudf-cu12's own tags say 2.24, but the libcudf-cu12 it requires is manylinux_2_28 only
    assert r.get("glibc").value == "2.28"
    tops = [_line(p) for p in r.get("glibc").sources]
    assert any(t.startswith("libcudf_cu12-25.6.0-py3-none-manylinux_2_28_x86_64.whl") for t in tops)
    r2610 = load_record().release("26.10")
    assert r2610.get("ucx").value == "<1.22,>=1.19.0"
    assert _line(r2610.get("ucx").sources[0]).startswith("Requires-Dist: distributed-ucxx-cu12")
    assert _line(r2610.get("ucx").sources[1]) == "Requires-Dist: libucx-cu12<1.22,>=1.19.0"
    assert r2610.get("cuda_majors").value == ["12", "13"]
    # releases whose cudf wheels are not on PyPI say so rather than guess
    assert load_record().release("24.08").get("pandas").note.startswith("no cudf-cu12 wheel")
