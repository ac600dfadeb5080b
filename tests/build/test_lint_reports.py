"""`build` lints before anything else, `--check` included, and the lint's rows ride on every
report it writes (--json tables, --junit properties), whatever the exit code: 5, 6 or 7."""

from __future__ import annotations

import json

from envcheck.cli import main
from envcheck.errors import ExitCode
from tests.support.channel import write_recipe


def test_build_check_lints_and_every_report_carries_the_lint_rows(tmp_path, capsys):
    from tests.support.channel import demo_channel

    channel = demo_channel(tmp_path / "channel")
    warn = write_recipe(tmp_path, channel, "[python=3.9, dask-cuda=22.08, pandas=2.0]")
    out, xml = tmp_path / "r.json", tmp_path / "r.xml"
    args = ["build", str(warn), "--check", "--out", str(tmp_path / "locks")]
    # no lock yet: exit 6, and the error report has the lint's warning row
    assert main([*args, "--json", str(out), "--junit", str(xml)]) == ExitCode.STALE
    (table,) = json.loads(out.read_text())["tables"]
    assert [r[2] for r in table["rows"]] == ["rapids.range"]
    assert 'name="RAPIDS release record[0]"' in xml.read_text()
    bad = write_recipe(tmp_path, channel, "[python=3.9, dask-cuda=22.08, dask=2023.1]", name="bad")
    args = ["build", str(bad), "--check", "--out", str(tmp_path / "locks"), "--json", str(out)]
    assert main(args) == ExitCode.UNSOLVABLE  # --check lints before it looks at the locks
    (table,) = json.loads(out.read_text())["tables"]
    assert [r[1:3] for r in table["rows"]] == [["error", "rapids.pin"]]
    assert "rapids.pin" in capsys.readouterr().err


def test_an_unreachable_channel_exit_7_report_keeps_the_lint_rows(tmp_path):
    r = tmp_path / "remote.yaml"
    # .invalid never resolves (RFC 2606): the solve cannot fetch, after the lint has run
    r.write_text(
        "name: remote\nchannels: ['https://conda.example.invalid/conda-forge']\n"
        "platforms: [linux-64]\nsystem: {glibc: '2.17'}\n"
        "dependencies: [python=3.9, dask-cuda=22.08, pandas=2.0]\n"
    )
    out, xml = tmp_path / "r.json", tmp_path / "r.xml"
    argv = ["build", str(r), "--out", str(tmp_path / "locks"), "--json", str(out)]
    assert main([*argv, "--junit", str(xml)]) == ExitCode.UNREACHABLE
    report = json.loads(out.read_text())
    (table,) = report["tables"]
    assert [row[1:3] for row in table["rows"]] == [["warn", "rapids.range"]]
    assert "RAPIDS release record[0]" in xml.read_text()
