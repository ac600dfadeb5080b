"""RAPIDS constraints the record reads from rapidsai's own files, each with the recipe the lint
graded wrongly before it had them (the rule id and the message asserted)."""

from __future__ import annotations

from pathlib import Path

from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.table import load_record

DATA = Path(__file__).parents[1] / "data" / "rapids-record"
EL8 = {"cuda": "12.8", "glibc": "2.28"}
EL7 = {"cuda": "11.5", "glibc": "2.17"}


def _errors(deps, system=EL7):
    return [f for f in lint(deps, system, load_record()) if f.severity == ERROR]


def _line(pointer: str) -> str:
    path, n = pointer.rsplit(":", 1)
    return (DATA / path).read_text().splitlines()[int(n) - 1]


def test_cudf_24_04_requires_pandas_2_to_2_2_1():
    (f,) = _errors(["cudf=24.04", "pandas<2"])
    assert f.rule == "rapids.range"
    assert "cudf 24.04 requires pandas >=2.0,<2.2.2dev0" in f.message
    (src,) = f.sources
    assert src.startswith("cudf/24.04/conda/recipes/cudf/meta.yaml:")
    assert _line(src).strip() == "- pandas >=2.0,<2.2.2dev0"
    assert load_record().origin(src).startswith("rapidsai/cudf@acbb30a962933092542e5bf065eb9847")
    assert _errors(["cudf=24.04", "pandas=2.2.2"])[0].rule == "rapids.range"
    assert _errors(["cudf=24.04", "pandas=2.1"]) == []
    assert _errors(["rapids=24.04", "pandas<2", "python=3.10"])[0].rule == "rapids.range"
    # the pin belongs to cudf: a recipe without cudf (or rapids) is not held to it
    assert _errors(["cucim=24.04", "pandas<2"]) == []


def test_cuml_22_08_requires_ucx_py_0_27_and_ucx_1_13():
    (f,) = _errors(["cuml=22.08", "ucx-py=0.26"])
    assert f.rule == "rapids.range"
    assert "cuml 22.08 requires ucx-py 0.27.* (cuml's conda recipe)" in f.message
    # the run requirement, the variable it names and the CI line that sets it
    assert [_line(s).strip() for s in f.sources] == [
        "- ucx-py {{ ucx_py_version }}",
        "{% set ucx_py_version=environ.get('UCX_PY_VERSION') %}",
        "export UCX_PY_VERSION='0.27.*'",
    ]
    (f,) = _errors(["cuml=22.08", "ucx=1.12.1"])
    assert f.rule == "rapids.range"
    assert "cuml 22.08 requires ucx >=1.13.0 (pyraft, which cuml requires)" in f.message
    assert [_line(s).strip() for s in f.sources] == [
        "- pyraft {{ minor_version }}",
        "- ucx >={{ ucx_version }}",
        '- "1.13.0"',
    ]
    assert load_record().origin(f.sources[1]).startswith("rapidsai/raft@9070c305479ff29669d3006a0")
    # the rapids meta-package installs cuml; the advice warning gives way to the error
    found = lint(["rapids=22.08", "ucx-py=0.26", "python=3.9"], EL7, load_record())
    assert [(f.rule, f.severity) for f in found if "ucx-py=0.26" in f.entries] == [
        ("rapids.range", ERROR)
    ]
    assert _errors(["cuml=22.08", "ucx-py=0.27", "ucx=1.13.0"]) == []
    # without cuml, ucx-py stays the advice of dask-cuda's CI
    assert _errors(["cudf=22.08", "ucx-py=0.26"]) == []
    assert _errors(["cuml=22.12", "ucx-py=0.28"])[0].message.endswith(
        "cuml 22.12 requires ucx-py 0.29.* (cuml's conda recipe)"
    )


def test_rapids_25_12_and_later_need_cuda_12_2(capsys):
    from envcheck.cli import main
    from envcheck.errors import ExitCode

    (f,) = _errors(["cudf=26.10", "cuda-version<12.2"], EL8)
    assert f.rule == "rapids.cuda"
    assert "RAPIDS 25.12 and later require CUDA >= 12.2 (RAPIDS support notice 54)" in f.message
    notice, *table = f.sources
    assert "from 12.0 to 12.2 starting with the v25.12 release" in _line(notice)
    assert [_line(p).strip() for p in table] == ['toolkit_min: "12.2"'] * 2
    assert load_record().origin(notice).startswith("rapidsai/docs@e4841960d7587a364fbbb2e52bd2")
    # releases the record does not cover are held to it too; 25.10 is not
    assert [g.rule for g in _errors(["cudf=25.12", "cuda-version=12.0"], EL8)] == ["rapids.cuda"]
    assert _errors(["cudf=25.10", "cuda-version=12.0"], EL8) == []
    assert _errors(["cudf=26.10", "cuda-version>=12.2,<13"], EL8) == []
    # a 12.0 driver under 26.10: recipe new refuses in one line naming the rule (exit 5)
    argv = ["recipe", "new", "--rapids", "26.10", "--cuda", "12.0", "--os", "el8"]
    assert main(argv) == ExitCode.UNSOLVABLE
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "RAPIDS 25.12 and later require CUDA >= 12.2" in err and "(rule rapids.cuda" in err
    assert "the recipe's target driver supports CUDA 12.0: try --rapids 25.10 (" in err
    assert "--cuda" not in err  # the driver is the target's: no hint asks to state another
    assert main([*argv, "--debug"]) == ExitCode.UNSOLVABLE  # the sources, with --debug
    assert "[docs/main/_notices/rsn0054.md:" in capsys.readouterr().err
    # and what it writes for a 12.8 driver starts at 12.2
    assert main(["recipe", "new", "--rapids", "26.10", "--cuda", "12.8", "--os", "el8"]) == 0
    assert "  - cuda-version>=12.2,<13 " in capsys.readouterr().out


def test_rapids_23_02_and_later_need_cuda_11_2():
    (f,) = _errors(["rapids=23.02", "python=3.10", "cudatoolkit=11.0"])
    assert f.rule == "rapids.cuda"
    assert "contradicts RAPIDS 23.02 ('rapids=23.02'): it requires CUDA 11.2+" in f.message
    assert f.sources == ("cudf/23.02/README.md:60",)
    assert _line(f.sources[0]) == "* CUDA 11.2+"
    assert load_record().origin(f.sources[0]).startswith("rapidsai/cudf@ac60656bc929c08f522d2")
    # no warning beside it: the error says it all
    found = lint(["rapids=23.02", "python=3.10", "cudatoolkit=11.0"], EL7, load_record())
    assert [g.rule for g in found] == ["rapids.cuda"]
    assert [g.rule for g in _errors(["cudf=24.04", "cuda-version=11.0"])] == ["rapids.cuda"]
    assert _errors(["cudf=23.02", "cudatoolkit=11.2"]) == []
    # 22.08-22.12 said CUDA 11.0+: 11.0 stays a warning (built with 11.5)
    assert _errors(["cudf=22.12", "cudatoolkit=11.0"]) == []
    assert _line(load_record().release("22.12").get("cuda_min").sources[0]) == "* CUDA 11.0+"


def test_23_04_patch_releases_pin_different_xgboost():
    sys = {"cuda": "11.8", "glibc": "2.17"}
    # a valid 23.04.00 environment: rapids-xgboost 23.04.00 pinned xgboost 1.7.1
    assert _errors(["rapids=23.04.00", "python=3.10", "xgboost=1.7.1"], sys) == []
    (f,) = _errors(["rapids=23.04.01", "python=3.10", "xgboost=1.7.1"], sys)
    assert f.rule == "rapids.pin"
    assert "rapids-xgboost 23.04.01 pins xgboost 1.7.5dev.rapidsai23.04" in f.message
    assert _line(f.sources[0]).strip() == "- '=1.7.5dev.rapidsai'"
    (f,) = _errors(["rapids-xgboost=23.04.00", "xgboost=1.7.5"], sys)
    assert "rapids-xgboost 23.04.00 pins xgboost 1.7.1dev.rapidsai23.04" in f.message
    assert _line(f.sources[0]).strip() == "- '=1.7.1dev.rapidsai'"
    origin = load_record().origin(f.sources[0])
    assert origin.startswith("rapidsai/integration@507dd02cc8702babbf5d218114a56c5fa3565fac")
    # 23.04 admits both patch releases: only what both say
    assert _errors(["rapids=23.04", "python=3.10", "xgboost=1.7.1"], sys) == []
    assert _errors(["rapids=23.04", "python=3.10", "xgboost=1.7.5"], sys) == []
    (f,) = _errors(["rapids=23.04", "python=3.10", "xgboost=1.6"], sys)
    assert "every patch release the recipe admits: 23.04.00, 23.04.01" in f.message
    # each patch's version is cited by its own RAPIDS_VER line
    patches = load_record().release("23.04").patches
    assert {p: _line(v["version"].sources[0]).strip() for p, v in patches.items()} == {
        "23.04.00": "- 23.04.00",
        "23.04.01": "- 23.04.01",
    }


def test_the_glibc_rule_after_24_04_cites_lines_that_state_it():
    rec = load_record()
    (f,) = [g for g in _errors(["cudf=24.06", "python=3.10"]) if g.rule == "rapids.glibc"]
    assert "RAPIDS 24.06 needs glibc >= 2.28" in f.message
    notice, *table = f.sources
    assert "CentOS 7` in release v24.04, and it will be removed in release v24.06" in _line(notice)
    assert rec.origin(notice).startswith("rapidsai/docs@be2bc0985ccb29aa0e37be97e1d72aa582594d18")
    # the docs' platform-support table: glibc_min 2.28 for each release it lists
    assert table and {_line(p).strip() for p in table} == {'glibc_min: "2.28"'}
    # what no copied file states is said, with the conda recipes' own glibc
    note = rec.release("24.06").get("glibc").note
    assert "no copied file names a glibc for the releases between" in note
    assert "glibc 2.17 through 24.12" in note
    assert _line("cudf/24.12/conda/recipes/cudf/conda_build_config.yaml:11").strip() == '- "2.17"'
    assert _line("cudf/25.02/conda/recipes/cudf/conda_build_config.yaml:13").strip() == '- "2.28"'
    # no pointer of the record is a bare notice name any more
    after = rec.after["glibc"]
    assert after.sources == f.sources and all(":" in s for s in after.sources)
