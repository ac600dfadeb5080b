"""What a package enforces at install is an error, in every spec form, conda or pip
(tests/build/test_lint_reports.py: the lint's rows on every report of `build`)."""

from __future__ import annotations

import pytest

from envcheck.resolve.record.entries import pep440_to_conda, pip_entries
from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.table import load_record

RECORD = load_record()
EL8 = {"cuda": "12.8", "glibc": "2.28"}


def _errors(deps, pip=(), system=EL8):
    return [f for f in lint(deps, system, RECORD, pip=pip) if f.severity == ERROR]


@pytest.mark.parametrize(
    ("pep440", "conda"),
    [
        ("===2022.7.1", "==2022.7.1"),
        ("~=2.1", ">=2.1,<3"),
        ("~=2.1.3", ">=2.1.3,<2.2"),
        ("==26.10.*", "26.10.*"),
        ("!=2.0.0,>=1.5", "!=2.0.0,>=1.5"),
        ("~=2", None),
    ],
)
def test_pep440_specifiers_read_as_their_conda_equals(pep440, conda):
    assert pep440_to_conda(pep440) == conda


def test_arbitrary_equality_pin_is_linted_not_a_traceback():
    (f,) = _errors(["python=3.12"], ["dask-cudf-cu12==25.8.*", "dask===2022.7.1"])
    assert f.rule == "rapids.pin" and "'dask===2022.7.1'" in f.message
    assert "dask-cudf 25.08 -> rapids-dask-dependency 25.8.0 -> dask ==2025.7.0" in f.message
    # === matches one version string exactly: not the release's pin, so an error too
    (f,) = _errors(["python=3.12"], ["dask-cudf-cu12==25.8.*", "dask===not-a-version"])
    assert f.rule == "rapids.pin"
    # a requirement pip cannot read, or a form conda has no equal for, is the resolver's
    assert _errors(["python=3.12"], ["dask-cudf-cu12==25.8.*", "dask~=2", "x[["]) == []


@pytest.mark.parametrize(
    ("deps", "pip", "rule", "needle"),
    [
        # cudf's Requires-Dist pins pandas: a pip pin beside it, in any form, cannot install
        (["python=3.12"], ["cudf-cu12==25.8.*", "pandas~=2.5.0"], "rapids.range",
         "cudf 25.08 requires pandas <2.4.0dev0,>=2.0"),
        (["python=3.12"], ["cudf-cu12==26.10.*", "pandas===2.2.3"], "rapids.range",
         "cudf 26.10 requires pandas <3.1.0,>=3.0.0"),
        # conda and pip entries are held to each other: a conda pandas beside a pip cudf
        (["python=3.12", "pandas=2.4"], ["cudf-cu12==25.8.*"], "rapids.range", "pandas"),
        (["cudf=24.12", "python=3.12", "pandas>=2.3"], [], "rapids.range",
         "cudf 24.12 requires pandas"),
        (["python=3.12"], ["dask-cudf-cu12==25.8.*", "numpy<1.20"], "rapids.range",
         "dask-cudf 25.08 requires numpy"),
        (["python=3.12"], ["cuml-cu12==25.12.*", "scikit-learn<1.3"], "rapids.range",
         "cuml 25.12 requires scikit-learn >=1.4"),
        (["python=3.12"], ["cudf-cu12==25.8.*", "cupy-cuda12x<12"], "rapids.range",
         "requires cupy >=12.0.0"),
        # raft-dask requires ucx-py of the release; cuml pulls raft-dask in
        (["cuml=23.08", "python=3.10", "ucx-py=0.31"], [], "rapids.range",
         "raft-dask 23.08 requires ucx-py 0.33.*"),
        # distributed-ucxx of another series than the release's cannot install beside it
        (["python=3.12"], ["dask-cuda==25.10.*", "distributed-ucxx-cu12==0.45.*"],
         "rapids.ucxx", "its UCXX is 0.46.*"),
        # a package cudf-cu12 pins to its own release, from another release
        (["python=3.12"], ["cudf-cu12==25.8.*", "pylibcudf-cu12==25.6.*"],
         "rapids.one-release", "'pylibcudf-cu12==25.6.*' (25.06)"),
        # a Python pinned through python_abi
        (["cudf=26.10", "python_abi 3.10.* *_cp310"], [], "rapids.python",
         "it was built for Python 3.11, 3.12, 3.13, 3.14"),
        # CUDA 11 wheels of 24.12 are not on pypi.org (NVIDIA's index has them)
        (["python=3.12"], ["cudf-cu11==24.12.*"], "rapids.cuda",
         "pypi.org has its wheels for CUDA 12.x only (the conda packages: CUDA 11, 12.x)"),
    ],
)
def test_what_a_package_enforces_is_an_error(deps, pip, rule, needle):
    found = _errors(deps, pip)
    assert [f.rule for f in found] == [rule], [f.line() for f in found]
    assert needle in found[0].message


def test_conda_and_pip_are_separate_cuda_axes_and_glibc_counts_the_lib_wheels():
    # RAPIDS 24.12-25.06 built their conda packages for CUDA 11.8 too
    for rel in ("24.12", "25.02", "25.04", "25.06"):
        assert _errors([f"cudf={rel}", "python=3.12", "cuda-version=11.8"]) == [], rel
    assert [f.rule for f in _errors(["cudf=25.08", "cuda-version=11.8"])] == ["rapids.cuda"]
    # libcudf-cu12 25.8.0 is manylinux_2_28 only: glibc 2.27 (Ubuntu 18.04) cannot load it
    (f,) = _errors(["python=3.12"], ["cudf-cu12==25.8.*"], {"glibc": "2.27"})
    assert f.rule == "rapids.glibc" and "needs glibc >= 2.28" in f.message
    assert any("libcudf-cu12.tsv" in s for s in f.sources)


def test_pip_entries_keep_the_text_the_recipe_wrote():
    got = pip_entries(["cudf-cu12==26.10.*", "cupy-cuda12x>=13", "libucx-cu12"], RECORD)
    assert [(e.text, e.name, e.version) for e in got] == [
        ("cudf-cu12==26.10.*", "cudf", "26.10.*"),
        ("cudf-cu12==26.10.*", "cuda-wheel", "12.*"),
        ("cupy-cuda12x>=13", "cupy", ">=13"),
        ("libucx-cu12", "ucx", None),
    ]
