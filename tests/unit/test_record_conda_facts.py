"""The conda side of the releases the record otherwise knows from their PyPI wheels: cudf's own
conda recipe at the release tag (24.06 / 24.08 have no cudf-cu12 wheel on pypi.org), read by
the record script from the copies in tests/data/rapids-record."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.new.options import Options
from envcheck.resolve.record.new.pipeline import compose
from envcheck.resolve.record.table import load_record, parse_record

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts" / "record"))
gen = importlib.import_module("rapids_record")

DATA = Path(__file__).resolve().parents[1] / "data" / "rapids-record"
RECORD = load_record()
EL8 = {"glibc": "2.28", "cuda": "12.8"}


def _errors(deps, pip=(), record=RECORD, platforms=()):
    found = lint(deps, EL8, record, pip=pip, platforms=platforms)
    return [f for f in found if f.severity == ERROR]


def _line(pointer: str) -> str:
    path, line = pointer.rsplit(":", 1)
    return (DATA / path).read_text().splitlines()[int(line) - 1].strip()


@pytest.mark.parametrize(
    ("rel", "numpy", "line"),
    [
        # 24.06: pin_compatible of the host's numpy 1.23, max_pin='x' (conda-build's <2a0)
        ("24.06", ">=1.23,<2a0", "- {{ pin_compatible('numpy', max_pin='x') }}"),
        ("24.08", ">=1.23,<2.0a0", "- numpy >=1.23,<2.0a0"),
    ],
)
def test_cudf_conda_caps_of_24_06_and_24_08_come_from_its_recipe(rel, numpy, line):
    reqs = {n: (s, p) for n, s, p in RECORD.release(rel).get("requires").value["cudf"]["requires"]}
    assert reqs["numpy"][0] == numpy and _line(reqs["numpy"][1]) == line
    assert reqs["pandas"][0] == ">=2.0,<2.2.3dev0"
    assert _line(reqs["pandas"][1]) == "- pandas >=2.0,<2.2.3dev0"
    assert reqs["numpy"][1].startswith(f"cudf/{rel}/conda/recipes/cudf/meta.yaml:")
    # the copy is the release tag's file, named in SOURCES.tsv
    assert f"(v{rel}.00)" in RECORD.origin(reqs["numpy"][1])


@pytest.mark.parametrize("rel", ["24.06", "24.08"])
def test_cudf_with_numpy_2_is_refused_naming_the_chain_and_line(rel):
    (f,) = _errors([f"cudf={rel}", "numpy=2.0"])
    assert f.rule == "rapids.range" and f"cudf {rel} requires numpy >=1.23,<2" in f.message
    assert f.sources[0].startswith(f"cudf/{rel}/conda/recipes/cudf/meta.yaml:")
    assert f.sources[0] in f.line()
    (f,) = _errors([f"cudf={rel}", "pandas=2.2.3"])
    assert f"cudf {rel} requires pandas >=2.0,<2.2.3dev0" in f.message
    assert _errors([f"cudf={rel}", "numpy=1.26", "pandas=2.2.2"]) == []


def test_the_cap_is_derived_from_the_recipe_file(tmp_path):
    data = tmp_path / "rapids-record"
    shutil.copytree(DATA, data)
    meta = data / "cudf/24.08/conda/recipes/cudf/meta.yaml"
    meta.write_text(meta.read_text().replace("- numpy >=1.23,<2.0a0", "- numpy >=1.23,<3.0a0"))
    edited = parse_record(gen.build_record(data))
    assert _errors(["cudf=24.08", "numpy=2.0"], record=edited) == []
    assert _errors(["cudf=24.06", "numpy=2.0"], record=edited) != []


@pytest.mark.parametrize(
    ("rel", "series", "ucx"),
    [("25.02", "0.42", ">=1.15.0,<1.19.0"), ("25.04", "0.43", ">=1.15.0,<1.19.0"),
     ("25.06", "0.44", ">=1.15.0,<1.19.0")],
)  # fmt: skip
def test_with_ucx_writes_the_conda_ucxx_of_25_02_to_25_06(rel, series, ucx):
    release = RECORD.release(rel)
    for name in ("distributed-ucxx", "ucx-py", "ucxx_series"):
        fact = release.get(name)
        assert fact.value == f"{series}.*" and fact.sources[0] == fact.sources[-1]
        assert fact.sources[0].startswith(f"dask-cuda/{rel}/dependencies.yaml:")
        assert f"(v{rel}.00)" in RECORD.origin(fact.sources[0])
    assert _line(release.get("distributed-ucxx").sources[0]) == f"- distributed-ucxx=={series}.*"
    assert release.get("ucx").value == ucx
    assert [_line(s) for s in release.get("ucx").sources] == [
        "- conda-forge::ucx {{ ucx_version }}",
        f"- '{ucx}'",
    ]
    text = compose(Options(rapids=rel, cuda="12.8", os="el8", with_=("ucx",)))
    assert f"  - distributed-ucxx={series} " in text and f"  - ucx-py={series} " in text
    assert f"  - ucx{ucx} " in text
    # pip has none: one header line says so, naming the first wheel pypi.org has
    (note,) = [ln for ln in text.splitlines() if ln.startswith("# --with ucx")]
    assert f"pypi.org has no distributed-ucxx-cu12 {series}: its first is 0.45.1" in note
    # the release's series is held: another one is an error
    (f,) = _errors([f"dask-cuda={rel}", "distributed-ucxx=0.45"])
    assert f.rule == "rapids.ucxx" and f"its UCXX is {series}.*" in f.message


def test_with_ucx_after_the_wheels_says_nothing_of_pip():
    text = compose(Options(rapids="25.08", cuda="12.8", os="el8", with_=("ucx",)))
    assert "  - distributed-ucxx=0.45 " in text
    assert not [ln for ln in text.splitlines() if ln.startswith("# --with ucx")]


def _recipe(tmp_path, deps, platforms, cuda="12.0", glibc="2.17"):
    from envcheck.resolve.recipe import load_recipe

    path = tmp_path / "rapids.yaml"
    path.write_text(
        "name: rapids\nchannels: [rapidsai, conda-forge, nvidia]\n"
        f"platforms: [{', '.join(platforms)}]\n"
        f'system: {{cuda: "{cuda}", glibc: "{glibc}"}}\n'
        "dependencies:\n" + "".join(f"  - {d}\n" for d in deps)
    )
    return load_recipe(path)


@pytest.mark.parametrize("rel", ["23.08", "23.10"])
def test_the_build_lint_refuses_aarch64_for_cuda_12_of_23_08_and_23_10(rel, tmp_path):
    from envcheck.errors import Unsolvable
    from envcheck.resolve.build.pipeline import lint_recipes

    fact = RECORD.release(rel).get("platforms")
    assert fact.value == {"11": ["linux-64", "linux-aarch64"], "12": ["linux-64"]}
    assert "ARCH: 'arm64'" not in " ".join(_line(s) for s in fact.sources if "'12." in _line(s))
    both = ("linux-64", "linux-aarch64")
    recipe = _recipe(tmp_path, [f"cudf={rel}", "cuda-version=12.0"], both)
    with pytest.raises(Unsolvable) as err:
        lint_recipes([recipe])
    assert "rapids.platform" in str(err.value)
    assert f"RAPIDS {rel} ('cudf={rel}') built no linux-aarch64 package for CUDA 12" in str(
        err.value
    )
    assert f"shared-action-workflows/{rel}/.github/workflows/conda-python-build.yaml:60" in str(
        err.value
    )
    # CUDA 11.8 was built for arm64; linux-64 alone takes CUDA 12; 23.12 built both
    lint_recipes([_recipe(tmp_path, [f"cudf={rel}", "cuda-version=11.8"], both)])
    lint_recipes([_recipe(tmp_path, [f"cudf={rel}", "cuda-version=12.0"], ("linux-64",))])
    lint_recipes([_recipe(tmp_path, ["cudf=23.12", "cuda-version=12.0"], both)])


def test_a_platform_no_release_built_is_refused_and_pip_is_its_own_axis():
    (f,) = _errors(["cudf=25.08"], platforms=("osx-arm64",))
    assert f.rule == "rapids.platform" and "built no osx-arm64 package" in f.message
    assert _errors([], ("cudf-cu12==25.8.*",), platforms=("osx-arm64",)) == []
    # 22.08-23.04: the ci/axis files name no architecture: nothing is refused
    assert not RECORD.release("22.08").get("platforms").known
    assert _errors(["cudf=22.08"], platforms=("linux-aarch64",)) == []
