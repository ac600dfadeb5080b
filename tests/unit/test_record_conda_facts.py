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
from envcheck.resolve.record.table import load_record, parse_record

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts" / "record"))
gen = importlib.import_module("rapids_record")

DATA = Path(__file__).resolve().parents[1] / "data" / "rapids-record"
RECORD = load_record()
EL8 = {"glibc": "2.28", "cuda": "12.8"}


def _errors(deps, pip=(), record=RECORD):
    return [f for f in lint(deps, EL8, record, pip=pip) if f.severity == ERROR]


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
