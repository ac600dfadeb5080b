"""envcheck.verify_node as a Python call returning a Report."""

from __future__ import annotations

import pytest

from envcheck.api import verify_node
from envcheck.errors import BadInput
from envcheck.report import Report, Status


def _by(report: Report, check: str):
    return [r for r in report.results if r.check == check]


def test_verify_node_returns_the_report_of_this_machine_with_skips():
    report = verify_node(skip=("glibc", "ucx"), min_glibc="2.17", plugins=False)
    assert isinstance(report, Report) and report.title == "envcheck verify node"
    (glibc,) = _by(report, "glibc")
    assert glibc.status is Status.SKIP and glibc.message == "skipped by --skip"
    assert _by(report, "host-limits")  # the rest ran
    assert report.environment["host"]


def test_verify_node_reads_values_as_an_expect_file_does(tmp_path):
    report = verify_node(min_glibc="99.0", expect_gpus=0, plugins=False)
    (glibc,) = _by(report, "glibc")
    assert glibc.status is Status.FAIL and "99.0" in glibc.message
    path = tmp_path / "n.yaml"
    path.write_text("min-glibc: '99.0'\n")
    (from_file,) = _by(verify_node(expect=str(path), plugins=False), "glibc")
    assert from_file.status is Status.FAIL
    (overridden,) = _by(verify_node(expect=path, min_glibc="2.17", plugins=False), "glibc")
    assert overridden.status is Status.PASS


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"expect_gpus": "8"}, "--expect-gpus must be an integer"),
        ({"cuda": 12.4}, "cuda must be a version as a quoted string"),
        ({"skip": ("nope",)}, "unknown check id nope"),
        ({"level": 7}, "--level must be 1, 2 or 3"),
    ],
)
def test_bad_options_raise_bad_input(kwargs, words):
    with pytest.raises(BadInput, match=words):
        verify_node(**kwargs)
