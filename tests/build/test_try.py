"""envcheck build RECIPE --try: each candidate added alone, real solves on a generated channel."""

from __future__ import annotations

import json

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.resolve.trial import parse_candidates
from tests.support.channel import pkg, write_recipe
from tests.support.worlds import RELEASES, write_world

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("try-world")
    # an add-on that needs an older dask than RAPIDS 22.08 pins: it conflicts with dask-cuda
    old = [
        pkg("dask-old-plugin", "1.0", ["dask <2022.1"], noarch="python"),
        pkg("dask", "2021.12.0", ["python >=3.8"], noarch="python"),
    ]
    return write_world(root, [RELEASES["22.08"], RELEASES["22.12"]], extra=old)


def test_try_reports_which_candidates_fit_and_the_smallest_clash(tmp_path, world, capsys):
    r = write_recipe(
        tmp_path,
        world,
        "[python=3.9, dask-cuda=22.08, cudatoolkit=11.5]",
        system='{cuda: "11.8", glibc: "2.28"}',
    )
    out = tmp_path / "report.json"
    tried = "cuml=22.08,cugraph=22.12,cuspatial=22.08,dask-old-plugin,cucim>=22.08,<22.10"
    code = main(
        ["build", str(r), "--out", str(tmp_path / "locks"), "--try", tried, "--json", str(out)]
    )
    assert code != ExitCode.UNSOLVABLE
    report = json.loads(out.read_text())
    (table,) = [t for t in report["tables"] if t["title"].endswith("each candidate alone")]
    rows = {row[0]: row[2:] for row in table["rows"]}
    assert rows == {
        "cuml=22.08": ["fits", ""],
        "cugraph=22.12": ["conflicts", "dask-cuda=22.08, cugraph=22.12"],
        "cuspatial=22.08": ["fits", ""],
        "dask-old-plugin": ["conflicts", "dask-cuda=22.08, dask-old-plugin"],
        "cucim>=22.08,<22.10": ["fits", ""],
    }
    assert not (tmp_path / "locks").exists()  # --try writes no lock


def test_try_refuses_a_candidate_the_recipe_has(tmp_path, world, capsys):
    r = write_recipe(tmp_path, world, "[python=3.9, dask-cuda=22.08]")
    code = main(["build", str(r), "--out", str(tmp_path / "l"), "--try", "dask-cuda=22.12"])
    assert code == ExitCode.BAD_INPUT
    assert "already has 'dask-cuda=22.08'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("values", "specs"),
    [
        (["cuml=22.08,cugraph=22.08"], ["cuml=22.08", "cugraph=22.08"]),
        (["cudf>=22.08,<22.10,cuspatial"], ["cudf>=22.08,<22.10", "cuspatial"]),
        (["a", "b,c"], ["a", "b", "c"]),
        (["cudf[version='>=22.08,<22.10'],x"], ["cudf[version='>=22.08,<22.10']", "x"]),
    ],
)
def test_candidate_lists_keep_ranges_whole(values, specs):
    assert parse_candidates(values) == specs
