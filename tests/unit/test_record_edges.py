"""A release's pins bind a recipe only through a package of it that requires them (the
record's per-package requirements, read from the METADATA and conda recipes in tests/data):
cudf alone takes any dask; dask-cudf, dask-cuda, cuml or `rapids` beside it hold it to the
release's pin, and the message names the chain with its lines."""

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


def _errors(deps, pip=(), record=RECORD):
    return [f for f in lint(deps, EL8, record, pip=pip) if f.severity == ERROR]


def _line(pointer: str) -> str:
    path, line = pointer.rsplit(":", 1)
    return (DATA / path).read_text().splitlines()[int(line) - 1].strip()


@pytest.mark.parametrize(
    ("deps", "pip"),
    [(["cudf=25.08", "dask=2024.1.1"], ()), ([], ("cudf-cu12==25.8.*", "dask==2024.1.1"))],
)
def test_cudf_alone_takes_a_dask_it_does_not_require(deps, pip):
    assert _errors(deps, pip) == []


@pytest.mark.parametrize(
    ("deps", "pip"),
    [
        (["cudf=25.08", "dask-cudf=25.08", "dask=2024.1.1"], ()),
        (["cudf=25.08", "dask-cuda=25.08", "dask=2024.1.1"], ()),
        (["cudf=25.08", "cuml=25.08", "dask=2024.1.1"], ()),
        (["rapids=25.08", "dask=2024.1.1"], ()),
        ([], ("cudf-cu12==25.8.*", "dask-cudf-cu12==25.8.*", "dask==2024.1.1")),
    ],
)
def test_a_package_that_requires_dask_holds_the_recipe_to_the_pin(deps, pip):
    (f,) = _errors(deps, pip)
    assert f.rule == "rapids.pin" and "==2025.7.0" in f.message


def test_the_message_names_the_chain_and_its_lines():
    (f,) = _errors([], ("dask-cudf-cu12==25.8.*", "dask==2024.1.1"))
    assert "dask-cudf 25.08 -> rapids-dask-dependency 25.8.0 -> dask ==2025.7.0" in f.message
    assert [_line(s) for s in f.sources] == [
        "Requires-Dist: rapids-dask-dependency==25.8.*",
        "Requires-Dist: dask==2025.7.0",
    ]
    (f,) = _errors(["cuml=25.10", "dask=2024.1.1"])
    assert "cuml 25.10 -> rapids-dask-dependency 25.10.0 -> dask ==2025.9.1" in f.message


@pytest.mark.parametrize(("rel", "pin"), [("24.10", "1.1.14"), ("24.12", "1.1.19"),
                                          ("25.02", "1.1.21")])  # fmt: skip
def test_dask_expr_pins_are_in_the_record_and_held(rel, pin):
    fact = RECORD.release(rel).get("dask-expr")
    assert fact.value == f"=={pin}"
    assert _line(fact.sources[-1]) == f"Requires-Dist: dask-expr=={pin}"
    (f,) = _errors([f"dask-cuda={rel}", "dask-expr=1.0.0"])
    assert f.rule == "rapids.pin" and f"dask-expr =={pin}" in f.message
    assert f"  - dask-expr=={pin} " in compose(Options(rapids=rel, cuda="12.8", os="el8"))


def test_editing_one_metadata_changes_the_verdict(tmp_path):
    data = tmp_path / "rapids-record"
    shutil.copytree(DATA, data)
    (meta,) = (data / "pypi").glob("cudf_cu12-25.8.0-*.METADATA")
    lines = meta.read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Requires-Dist: "))
    lines.insert(at, "Requires-Dist: rapids-dask-dependency==25.8.*\n")
    meta.write_text("".join(lines))
    edited = parse_record(gen.build_record(data))
    deps = ["cudf=25.08", "dask=2024.1.1"]
    assert _errors(deps) == []
    (f,) = _errors(deps, record=edited)
    assert "cudf 25.08 -> rapids-dask-dependency 25.8.0 -> dask ==2025.7.0" in f.message
    assert f.sources[0] == f"pypi/{meta.name}:{at + 1}"


def test_a_library_the_meta_package_stops_listing_is_ended_when_named():
    lib = RECORD.libraries["cusignal"]
    assert lib.value["last"] == "23.08" and lib.value["ended"]
    assert _line(lib.sources[0]) == "- cusignal ={{ major_minor_version }}.*"
    assert "cudf-kafka" not in RECORD.libraries  # built with cudf, which goes on
    (f,) = [f for f in lint(["cudf=24.06", "cusignal=24.06"], EL8, RECORD) if f.severity == ERROR]
    assert f.rule == "rapids.ended" and "its last release is 23.08" in f.message
    assert _errors(["cudf=23.08", "cusignal=23.08"]) == []


def test_a_bound_binds_through_the_package_that_requires_it():
    # dask-cuda 25.08 requires numba itself, cited by its own line; it does not require cupy
    (f,) = _errors([], ("dask-cuda==25.8.*", "numba<0.50"))
    assert "dask-cuda 25.08 requires numba <0.62.0a0,>=0.59.1" in f.message
    assert _line(f.sources[0]) == "Requires-Dist: numba<0.62.0a0,>=0.59.1"
    assert _errors([], ("dask-cuda==25.8.*", "cupy-cuda12x<10")) == []
    (f,) = _errors([], ("cudf-cu12==25.8.*", "cupy-cuda12x<10"))
    assert "cudf 25.08 requires cupy >=12.0.0" in f.message
    # before the wheels: cudf's conda recipe run section (numpy<1.23 in 22.08)
    (f,) = _errors(["cudf=22.08", "numpy>=1.24"])
    assert _line(f.sources[0]) == "- numpy<1.23"


@pytest.mark.parametrize(
    ("pip", "bad"),
    [
        # 25.12 names no patch: the 25.12.0 tag's pin (2025.9.1) and the hotfix's both pass
        (("dask-cudf-cu12==25.12.*", "dask==2025.9.1"), None),
        (("dask-cudf-cu12==25.12.*", "dask==2025.9.2"), None),
        (("dask-cudf-cu12==25.12.*", "dask==2025.9.0"), "==2025.9.1"),
        # naming a patch takes that patch's pin
        (("rapids-dask-dependency==25.12.0", "dask==2025.9.1"), None),
        (("rapids-dask-dependency==25.12.0", "dask==2025.9.2"), "==2025.9.1"),
        (("rapids-dask-dependency==25.12.1", "dask==2025.9.1"), "==2025.9.2"),
    ],
)
def test_each_patch_release_keeps_its_own_pins(pip, bad):
    found = _errors([], pip)
    if bad is None:
        assert found == []
    else:
        (f,) = found
        assert f.rule == "rapids.pin" and f"dask {bad}" in f.message
        assert any(_line(s) == f"Requires-Dist: dask{bad}" for s in f.sources)
    patches = RECORD.release("25.12").patches
    assert sorted(patches) == ["25.12.0", "25.12.1"]
    assert patches["25.12.0"]["dask"].value == "==2025.9.1"


def test_cuproj_after_25_04_is_refused_when_named(capsys):
    from envcheck.cli import main
    from envcheck.errors import ExitCode

    assert RECORD.libraries["cuproj"].value["last"] == "25.04"
    (f,) = _errors(["cudf=25.08", "cuproj=25.08"])
    assert f.rule == "rapids.ended" and f.sources == ("pypi/files/cuproj-cu12.tsv:8",)
    for extra in (["--libs", "cudf,cuproj"], ["--with", "cuproj"]):
        argv = ["recipe", "new", "--rapids", "25.08", "--cuda", "12.8", "--os", "el8", *extra]
        assert main(argv) == ExitCode.UNSOLVABLE
        (err,) = capsys.readouterr().err.strip().splitlines()
        assert "cuproj has no RAPIDS 25.08: its last release is 25.04" in err
        assert "(rule rapids.ended" in err
    assert "cuproj" in compose(Options(rapids="25.04", cuda="12.8", os="el8", with_=("cuproj",)))


@pytest.mark.parametrize(("rel", "series"), [("25.08", "0.45"), ("25.10", "0.46"),
                                             ("25.12", "0.47")])  # fmt: skip
def test_with_ucx_writes_the_releases_ucxx_and_its_libucx(rel, series):
    release = RECORD.release(rel)
    assert release.get("distributed-ucxx").value == f"{series}.*"
    ucx = release.get("ucx")
    assert ucx.known and _line(ucx.sources[-1]).startswith("Requires-Dist: libucx-cu12")
    text = compose(Options(rapids=rel, cuda="12.8", os="el8", with_=("ucx",)))
    assert f"  - distributed-ucxx={series} " in text and f"  - ucx{ucx.value} " in text


def test_a_conda_requirement_of_one_cuda_major_binds_no_recipe():
    # cudf 24.02's run section: cuda-python >=11.7.1,<12.0a0 under {% if cuda_major == "11" %},
    # >=12.0,<13.0a0 under {% else %}: which holds depends on the CUDA the solve picks
    reqs = RECORD.release("24.02").get("requires").value["cudf"]["requires"]
    assert "cuda-python" not in [name for name, _, _ in reqs]
    assert _errors(["cudf=24.02", "cuda-python=12.0"]) == []
    assert [name for name, _, _ in reqs][:1] == ["python"]
