"""The table people read: the verdict first, then failures and warnings with their fix, passes
one line per group, skips one line per reason, measurements on request; words never cut."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from envcheck.report import Measurement, Report, Result, Status, Table, render_table
from envcheck.report_text import skip_lines

WORKER = "tcp://10.120.33.201:40123"
FIX = f"install distributed==2026.1.0 on {WORKER} (pip install 'distributed==2026.1.0')"


def _report() -> Report:
    no_gpu = "no GPU on this machine"
    return Report(
        "verify node",
        (
            Result("glibc", Status.PASS, "glibc 2.36", group="node"),
            Result("driver", Status.FAIL, "driver 470 < 525",
                   fix="pip install 'cluster-envcheck[gpu]'"),
            *(Result(c, Status.SKIP, no_gpu) for c in ("gpus", "ecc", "pcie", "nvlink")),
            Result("ucx", Status.SKIP, "UCX not installed"),
            Result("busy-gpus", Status.WARN, "another user's process holds GPU 0"),
            Result("skew.distributed", Status.FAIL,
                   f"distributed differs: worker {WORKER} has 2025.1.0; client, scheduler and "
                   "4 workers have 2026.1.0", node=WORKER, fix=FIX, group="cluster"),
        ),
        measurements=(Measurement("facts round", 0.25, "s"),),
        tables=(Table("version skew", ("package", "client", WORKER, "verdict"),
                      (("distributed", "2026.1.0", "2025.1.0", "fail"),)),),
    )


def _render(report: Report, verbose: bool = False, width: int = 200, **kw: bool) -> str:
    out = io.StringIO()
    render_table(report, Console(file=out, width=width, color_system=None), verbose=verbose, **kw)
    return out.getvalue()


def test_the_first_line_is_the_verdict_then_failures_before_warnings_before_passes() -> None:
    lines = _render(_report()).splitlines()
    assert lines[0] == "FAIL  verify node: 2 fail, 1 warn, 1 pass, 5 skip (exit 2)"
    firsts = [ln.split()[0] for ln in lines[1:] if ln and not ln.startswith(" ")]
    assert firsts[:3] == ["fail", "fail", "warn"]
    text = "\n".join(lines)
    assert text.index("busy-gpus") < text.index("glibc 2.36")  # a lone pass keeps its message


def test_many_passes_fold_into_one_line_per_group() -> None:
    from envcheck.report_text import FEW_PASSES

    many = tuple(Result(f"c{i}", Status.PASS, f"message {i}", group="node")
                 for i in range(FEW_PASSES + 1))
    text = _render(Report(title="verify node", results=many))
    assert f"{FEW_PASSES + 1} passed (node): c0, c1" in text and "message 0" not in text
    few = _render(Report(title="verify node", results=many[:FEW_PASSES]))
    assert "message 0" in few and "passed (node)" not in few


def test_each_failure_keeps_its_fix_and_its_brackets() -> None:
    text = _render(_report())
    assert "fix: pip install 'cluster-envcheck[gpu]'" in text
    assert "driver 470 < 525" in text


def test_skips_fold_into_one_line_per_reason_with_a_count_most_frequent_first() -> None:
    text = _render(_report())
    lines = [ln.strip() for ln in text.splitlines() if "skipped:" in ln]
    assert lines == [
        "4 skipped: no GPU on this machine (gpus, ecc, pcie, nvlink)",
        "1 skipped: UCX not installed (ucx)",
    ]
    assert text.count("no GPU on this machine") == 1


def test_measurements_show_only_when_asked_for() -> None:
    assert "0.25 s" not in _render(_report())
    assert "1 measurement: shown with --verbose" in _render(_report())
    assert "0.25 s" in _render(_report(), measurements=True)
    assert "0.25 s" in _render(_report(), verbose=True)
    assert "bare" not in _render(_report(), verbose=True)


def test_failures_keep_their_fix_and_its_brackets() -> None:
    text = _render(_report())
    assert "pip install 'cluster-envcheck[gpu]'" in text
    assert "driver 470 < 525" in text


def test_verbose_shows_every_check_with_its_message() -> None:
    text = _render(_report(), verbose=True)
    assert "skipped:" not in text and "glibc 2.36" in text
    assert sum("no GPU on this machine" in ln for ln in text.splitlines()) == 4


@pytest.mark.parametrize("width", [80, 160])
def test_wrapping_keeps_addresses_and_ids_whole_and_within_the_width(width: int) -> None:
    text = _render(_report(), width=width)
    words = set(text.split())
    for whole in (WORKER, f"[{WORKER}]", "skew.distributed", "distributed==2026.1.0"):
        assert any(whole in w for w in words), (whole, text)
    assert max(map(len, text.splitlines())) <= width, text
    assert "tcp://10.120.33.201:4\n" not in text


def test_a_table_too_wide_for_the_terminal_prints_one_line_per_row() -> None:
    narrow = _render(_report(), width=40)
    assert "distributed: client 2026.1.0," in narrow and WORKER in narrow.split()


def test_skip_lines_name_the_node_when_results_come_from_several_nodes() -> None:
    skips = [Result("gpus", Status.SKIP, "no GPU", node=n) for n in ("a", "b")]
    assert skip_lines(skips) == ["  2 skipped: no GPU (gpus[a], gpus[b])"]


def test_a_long_list_of_checks_is_cut_with_an_ellipsis() -> None:
    skips = [Result(f"c{i}", Status.SKIP, "same") for i in range(9)]
    (line,) = skip_lines(skips)
    assert line == "  9 skipped: same (c0, c1, c2, c3, c4, c5, ...)"


def test_a_report_has_a_short_repr_and_properties_for_status_counts_and_exit_code() -> None:
    report = _report()
    assert repr(report) == (
        "<Report 'verify node' fail: 1 pass, 1 warn, 2 fail, 5 skip, exit 2>"
    )
    assert str(report) == repr(report)
    assert report.counts["fail"] == 2 and int(report.exit_code) == 2
    assert report.status is Status.FAIL


@pytest.mark.parametrize("columns", [80, 160])
def test_verify_node_at_the_terminal_width_leads_with_the_verdict(columns: int) -> None:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    out = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--expect-gpus", "1"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    lines = out.stdout.splitlines()
    assert re.match(r"(PASS|WARN|FAIL|ERROR) +envcheck verify node: \d+ ", lines[0]), out.stdout
    assert max(map(len, lines)) <= columns, out.stdout
    assert not any(ln.strip().startswith("skip ") for ln in lines), out.stdout
    assert "measurement" in out.stdout and "collect_node_facts" not in out.stdout


def test_a_fix_shared_by_many_rows_is_said_once() -> None:
    workers = [f"tcp://10.0.0.{i}:40123" for i in range(1, 5)]
    report = Report("envcheck verify cluster", tuple(
        Result("skew.distributed", Status.FAIL, "distributed 2025.1.0", node=w, fix=FIX,
               group="cluster") for w in workers))
    text = _render(report)
    assert text.count(FIX) == 1
    assert text.count(f"fix: as for skew.distributed [{workers[0]}] above") == 3
