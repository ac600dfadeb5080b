"""The table people read: failures in full, passes a row each, skips folded by reason."""

from __future__ import annotations

import io

from rich.console import Console

from envcheck.report import Report, Result, Status, render_table, skip_lines


def _report() -> Report:
    no_gpu = "no GPU on this machine"
    return Report(
        "verify node",
        (
            Result("driver", Status.FAIL, "driver 470 < 525",
                   fix="pip install 'cluster-envcheck[gpu]'"),
            Result("glibc", Status.PASS, "glibc 2.36"),
            *(Result(c, Status.SKIP, no_gpu) for c in ("gpus", "ecc", "pcie", "nvlink")),
            Result("ucx", Status.SKIP, "UCX not installed"),
        ),
    )


def _render(report: Report, verbose: bool = False) -> str:
    out = io.StringIO()
    render_table(report, Console(file=out, width=200, color_system=None), verbose=verbose)
    return out.getvalue()


def test_skips_fold_into_one_line_per_reason_with_a_count_most_frequent_first() -> None:
    text = _render(_report())
    lines = [ln.strip() for ln in text.splitlines() if "skipped:" in ln]
    assert lines == [
        "4 skipped: no GPU on this machine (gpus, ecc, pcie, nvlink)",
        "1 skipped: UCX not installed (ucx)",
    ]
    assert text.count("no GPU on this machine") == 1


def test_failures_keep_their_fix_and_brackets_and_passes_keep_a_row() -> None:
    text = _render(_report())
    assert "pip install 'cluster-envcheck[gpu]'" in text
    assert "driver 470 < 525" in text and "glibc 2.36" in text
    assert "FAIL: 1 pass, 1 fail, 5 skip (exit 2)" in text


def test_verbose_shows_every_skip_as_a_row() -> None:
    text = _render(_report(), verbose=True)
    assert "skipped:" not in text
    assert sum("no GPU on this machine" in ln for ln in text.splitlines()) == 4


def test_skip_lines_name_the_node_when_results_come_from_several_nodes() -> None:
    skips = [Result("gpus", Status.SKIP, "no GPU", node=n) for n in ("a", "b")]
    assert skip_lines(skips) == ["  2 skipped: no GPU (gpus[a], gpus[b])"]


def test_a_long_list_of_checks_is_cut_with_an_ellipsis() -> None:
    skips = [Result(f"c{i}", Status.SKIP, "same") for i in range(9)]
    (line,) = skip_lines(skips)
    assert line == "  9 skipped: same (c0, c1, c2, c3, c4, c5, ...)"
