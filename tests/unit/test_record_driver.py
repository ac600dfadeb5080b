"""The driver (system.cuda, --cuda: conda's __cuda) and the toolkit (cuda-version, cudatoolkit,
-cuXX wheels, --toolkit) as CUDA and conda define them, on the shipped record and the
platform_support.yml it cites: a newer driver runs an older major's toolkit (no refusal, no
advice to misstate the driver); a CUDA 12 driver runs no CUDA 13 (driver >= 580); a release's
toolkit minimum (25.06: 11.4) and driver minimum are errors citing their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.resolve.record.cuda import runs
from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.new.options import Options
from envcheck.resolve.record.new.pipeline import compose
from envcheck.resolve.record.table import load_record

DATA = Path(__file__).resolve().parents[1] / "data" / "rapids-record"
RECORD = load_record()
EL8 = {"glibc": "2.28"}


def _line(pointer: str) -> str:
    path, line = pointer.rsplit(":", 1)
    return (DATA / path).read_text().splitlines()[int(line) - 1].strip()


def _errors(deps, cuda, pip=()):
    return [f for f in lint(deps, {**EL8, "cuda": cuda}, RECORD, pip=pip) if f.severity == ERROR]


@pytest.mark.parametrize(
    ("driver", "toolkit", "ok"),
    [
        ("13.0", "12.9", True),  # a newer major's driver runs an older toolkit
        ("12.0", "12.9", True),  # CUDA 12 on: minor version compatibility
        ("12.8", "13.0", False),  # no CUDA 13 on a CUDA 12 driver
        ("12.9", "13.0", False),
        ("11.5", "11.8", False),  # before 12: the toolkit's own driver or newer
        ("11.8", "11.8", True),
        ("12.8", "11.5", True),
    ],
)
def test_a_driver_runs_toolkits_as_cuda_defines(driver, toolkit, ok):
    assert runs(driver, toolkit) is ok


# finding 1: a driver newer than the release's CUDA is no contradiction
@pytest.mark.parametrize(
    ("rapids", "cuda", "os_", "written"),
    [
        ("25.08", "13.0", "el8", "cuda-version>=12.0,<13"),
        ("22.08", "12.8", "el7", "cudatoolkit=11.5"),
        ("23.02", "12.4", "el7", "cudatoolkit=11.8"),
    ],
)
def test_a_newer_driver_takes_the_newest_toolkit_it_runs_and_says_so(rapids, cuda, os_, written):
    text = compose(Options(rapids=rapids, cuda=cuda, os=os_))
    said = [ln for ln in text.splitlines() if ln.startswith(f"# The driver (CUDA {cuda})")]
    assert len(said) == 1 and f"RAPIDS {rapids}'s CUDA" in said[0], text
    assert f"  - {written} " in text
    assert f'system: {{cuda: "{cuda}"' in text
    deps = [ln.split("#")[0].strip()[2:] for ln in text.splitlines() if ln.startswith("  - ")]
    assert _errors(deps, cuda) == []


def test_the_lint_takes_a_newer_driver_with_an_older_toolkit():
    assert _errors(["cudf=25.08", "cuda-version=12.9"], "13.0") == []
    assert _errors(["cudf=22.08", "cudatoolkit=11.5"], "12.8") == []


# finding 2: CUDA 13 on a CUDA 12 driver is an error citing platform_support.yml's driver_min
@pytest.mark.parametrize(
    ("deps", "pip", "cuda"),
    [
        (["cudf=25.10", "cuda-version=13.0"], (), "12.8"),
        ([], ("cudf-cu13==25.10.*",), "12.9"),
    ],
)
def test_cuda_13_on_a_cuda_12_driver_is_an_error_citing_driver_min(deps, pip, cuda):
    (f,) = _errors(deps, cuda, pip)
    assert f.rule == "rapids.cuda" and "CUDA 13 needs driver >= 580" in f.message
    assert f"a driver for CUDA {cuda}" in f.message
    assert 'driver_min: "580"' in [_line(s) for s in f.sources]
    assert all(s.startswith("docs/main/_data/platform_support.yml:14") for s in f.sources)


def test_recipe_new_refuses_a_cuda_13_toolkit_on_a_cuda_12_driver(capsys):
    argv = ["recipe", "new", "--rapids", "25.10", "--cuda", "12.8", "--toolkit", "13.0"]
    assert main([*argv, "--os", "el8"]) == ExitCode.UNSOLVABLE
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "(rule rapids.cuda" in err and "try --toolkit 12.9" in err and "--cuda" not in err


# finding 3: 25.06's toolkit_min 11.4 and driver_min 470.42.01 are errors, cited
def test_25_06_holds_cuda_11_to_its_toolkit_and_driver_minimums(capsys):
    (f,) = _errors(["cudf=25.06", "cuda-version=11.2"], "11.8")
    assert f.rule == "rapids.cuda" and "it requires CUDA 11.4+ for CUDA 11" in f.message
    assert [_line(s) for s in f.sources] == ['toolkit_min: "11.4"']
    found = _errors(["cudf=25.06"], "11.2")
    assert [g.rule for g in found] == ["rapids.cuda"]
    assert 'driver_min: "470.42.01"' in [_line(s) for s in found[0].sources]
    argv = ["recipe", "new", "--rapids", "25.06", "--cuda", "11.2", "--os", "el8"]
    assert main(argv) == ExitCode.UNSOLVABLE
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "(rule rapids.cuda" in err and "--cuda" not in err.split("try")[-1]
    text = compose(Options(rapids="25.06", cuda="11.8", os="el8"))
    (line,) = [ln for ln in text.splitlines() if ln.startswith("  - cuda-version")]
    assert line.startswith("  - cuda-version>=11.4,<=11.8 ")
    assert "docs/main/_data/platform_support.yml:216" in line


def test_recipe_new_out_says_which_toolkit_a_newer_driver_takes(tmp_path, capsys):
    out = tmp_path / "r.yaml"
    argv = ["recipe", "new", "--rapids", "25.08", "--cuda", "13.0", "--os", "el8"]
    assert main([*argv, "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"wrote {out}"
    assert lines[1:] == ["The driver (CUDA 13.0) is newer than RAPIDS 25.08's CUDA: the toolkit "
                         "is its newest the driver runs, CUDA 12 (built with 12.9)."]  # fmt: skip
    assert main(["recipe", "new", "--rapids", "25.08", "--cuda", "12.8", "--os", "el8",
                 "--out", str(out)]) == 0  # fmt: skip
    assert capsys.readouterr().out.strip().splitlines() == [f"wrote {out}"]


def test_recipe_new_writes_the_toolkit_asked_for_and_holds_it_to_the_minimum(capsys):
    text = compose(Options(rapids="25.06", cuda="11.8", os="el8", toolkit="11.5"))
    assert "  - cuda-version=11.5 " in text
    argv = ["recipe", "new", "--rapids", "25.06", "--cuda", "11.8", "--toolkit", "11.2"]
    assert main([*argv, "--os", "el8"]) == ExitCode.UNSOLVABLE
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "RAPIDS 25.06 rules out 'cuda-version=11.2': it requires CUDA 11.4+" in err
    assert "(rule rapids.cuda" in err and "--cuda" not in err
