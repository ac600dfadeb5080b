"""A Report for people at a terminal: the verdict first, then what is wrong with its fix.

Order: one summary line; every error, failure and warning with its node, message and fix;
the extra tables (version skew); passes as one line per group; skips as one line per cause;
measurements only when asked for (``--bench``, ``--verbose``). Text wraps at spaces only, so
a check id, an address or a command is never cut in two (a word wider than the terminal
runs past its edge whole). Duck-typed on report.Report, like report_html.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
import textwrap
from collections.abc import Mapping
from typing import Any

from envcheck.report_fold import node_with_hosts, passed_names, shared_nodes
from envcheck.report_table import print_table
from envcheck.width import columns as width_of

ISSUES = ("error", "fail", "warn")  # worst first
_STYLE = {
    "pass": "green",
    "warn": "yellow",
    "fail": "bold red",
    "skip": "dim",
    "error": "bold magenta",
}
_INDENT = " " * 6


def summary_line(report: Any) -> str:
    """``FAIL  verify node: 1 fail, 10 pass, 5 skip (exit 2)``: the worst status, the counts
    worst first, the exit code."""
    counts = report.counts
    order = (*ISSUES, "pass", "skip")
    listed = ", ".join(f"{counts[s]} {s}" for s in order if counts.get(s))
    return (
        f"{report.status.value.upper():<5} {report.title}: {listed or 'no results'}"
        f" (exit {int(report.exit_code)})"
    )


def wrap(text: str, width: int, first: str = "", rest: str = _INDENT) -> list[str]:
    """``text`` wrapped at spaces only: ids, addresses, paths and commands stay whole."""
    return textwrap.wrap(
        text,
        width=max(width, 20),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def issue_lines(result: Any, width: int, hosts: Mapping[str, str] | None = None,
                fixed: dict[str, str] | None = None) -> list[str]:
    """One result that is not a pass or skip: status, check and node (with its host, where
    ``hosts`` knows it); message; its fix. ``fixed``: fix -> the first check that printed it;
    a fix said before is named, not repeated (one skewed package on every worker has one fix)."""
    node = node_with_hosts(result.node, hosts or {})
    where = f" [{node}]" if node else ""
    lines = wrap(f"{result.check or result.group}{where}", width, f"{result.status.value:<5} ")
    lines += wrap(result.message, width, _INDENT)
    if result.fix and fixed is not None and result.fix in fixed:
        lines += wrap(f"fix: as for {fixed[result.fix]} above", width, _INDENT)
    elif result.fix:
        lines += wrap(f"fix: {result.fix}", width, _INDENT, _INDENT + "     ")
        if fixed is not None:
            fixed[result.fix] = f"{result.check or result.group}{where}"
    return lines


SKIP_REASONS = 8  # the most frequent reasons skips are said for, one line each; the rest counted


def skip_lines(skips: list[Any], limit: int = 6) -> list[str]:
    """One line per skip reason, most frequent first: "20 skipped: no GPU (driver, gpus, ...)";
    a check skipped alike on several nodes is named once with their count (report_fold), and
    checks that all skipped on the same nodes name those once ("(on vm (4 ranks): driver,
    gpus)")."""
    by_reason: dict[str, list[Any]] = {}
    several = len({x.node for x in skips}) > 1
    for r in skips:
        by_reason.setdefault(r.message, []).append(r if several else _nodeless(r))
    lines = []
    ranked = sorted(by_reason.items(), key=lambda kv: -len(kv[1]))
    for reason, results in ranked[:SKIP_REASONS]:
        on, unique = _named(results)
        listed = ", ".join(unique[:limit]) + (", ..." if len(unique) > limit else "")
        lines.append(f"  {len(results)} skipped: {reason} ({f'on {on}: ' if on else ''}{listed})")
    rest = ranked[SKIP_REASONS:]
    if rest:
        n = sum(len(results) for _, results in rest)
        lines.append(f"  {n} skipped for {len(rest)} other reasons: shown with --verbose, kept "
                     "in --json")
    return lines


def by_cause(skips: list[Any]) -> list[Any]:
    """Skips grouped by cause: a skip's message names its cause first, then ``: `` and the
    detail ("not installed: TensorFlow"). Where messages that differ share a cause, each of
    them is that cause alone, so that ``skip_lines`` says it once for all; a message no other
    shares its cause with stays whole."""
    said: dict[str, set[str]] = {}
    for r in skips:
        said.setdefault(r.message.split(": ", 1)[0], set()).add(r.message)
    out = []
    for r in skips:
        cause = r.message.split(": ", 1)[0]
        out.append(r if len(said[cause]) == 1 else dataclasses.replace(r, message=cause))
    return out


def _named(results: list[Any]) -> tuple[str, list[str]]:
    """(the nodes every check of ``results`` ran on, where they are the same for all and there
    are several checks, else ""; each check once, with its nodes where the first is "")."""
    on = shared_nodes(results) if len({r.check for r in results}) > 1 else ""
    if on:
        return on, list(dict.fromkeys(r.check for r in results))
    return "", passed_names(results)


def _nodeless(r: Any) -> Any:
    """``r`` named by its check alone (every skip is on one node: naming it says nothing)."""
    from types import SimpleNamespace

    return SimpleNamespace(check=r.check, node="")


FEW_PASSES = 3  # at most this many passes print a line each, with their messages


def pass_lines(passes: list[Any], width: int) -> list[str]:
    """One wrapped line per group: ``12 passed (node): driver, gpus, glibc, ...``; a check
    that passed on several nodes is named once with their count (report_fold)."""
    groups: dict[str, list[Any]] = {}
    for r in passes:
        groups.setdefault(r.group or "checks", []).append(r)
    lines = []
    for group, results in groups.items():
        on, names = _named(results)
        where = f" on {on}" if on else ""
        lines += wrap(f"{len(results)} passed ({group}){where}: {', '.join(names)}", width,
                      "  ", "    ")
    return lines


def measurement_rows(report: Any) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The measurements as table columns and rows (value, reference, verdict)."""
    columns = ("name", "node", "value", "reference", "verdict")
    rows = [
        (
            m.name,
            m.node,
            f"{m.value:.4g} {m.unit}",
            "" if m.reference is None else f"{m.reference:.4g} {m.unit}",
            m.verdict,
        )
        for m in report.measurements
    ]
    return columns, rows


def stdout_console() -> Any:
    """rich's Console for the report on stdout, as wide as envcheck.width says (a terminal's
    width; in a pipe or a file ``COLUMNS``, else 100). Under Open MPI a rank's stdout is a
    pseudo-terminal mpirun opens whatever its own output is (a log file, a pipe), so rich
    would write colour codes into logs: there the report is plain text unless FORCE_COLOR
    asks for colour (rich honours NO_COLOR and FORCE_COLOR elsewhere)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's own exits 1: the caller keeps the verdict's code (`envcheck ... | head -1`)
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    if "OMPI_COMM_WORLD_RANK" in os.environ and not os.environ.get("FORCE_COLOR"):
        return _Console(force_terminal=False, force_interactive=False, width=width_of(sys.stdout))
    return _Console(width=width_of(sys.stdout))


def render(report: Any, console: Any = None, verbose: bool = False,
           measurements: bool = False) -> None:
    """Print ``report`` (see the module's docstring). ``verbose``: every pass and skip with
    its message, and the measurements; ``measurements``: the measurements table."""
    from rich.text import Text

    console = console or stdout_console()
    width = console.width

    def say(line: str, style: str = "") -> None:
        console.print(Text(line, style=style), soft_wrap=True, highlight=False)

    for line in wrap(summary_line(report), width):
        say(line, _STYLE[report.status.value])
    issues = sorted(
        (r for r in report.results if r.status.value in ISSUES),
        key=lambda r: ISSUES.index(r.status.value),
    )
    hosts = getattr(report, "hosts", None) or {}
    fixed: dict[str, str] = {}
    for r in issues:
        for i, line in enumerate(issue_lines(r, width, hosts, fixed)):
            say(line, _STYLE[r.status.value] if i == 0 else "")
    for t in report.tables:
        print_table(console, t.title, t.columns, [tuple(map(str, r)) for r in t.rows], width,
                    wrap)
    passes = [r for r in report.results if r.status.value == "pass"]
    skips = [r for r in report.results if r.status.value == "skip"]
    # a few passes (build's locks, an install) are the product: each shows its message
    shown = passes + skips if verbose else passes if len(passes) <= FEW_PASSES else []
    for r in shown:
        for i, line in enumerate(issue_lines(r, width)):
            say(line, _STYLE[r.status.value] if i == 0 else "dim")
    if not verbose:
        if len(passes) > FEW_PASSES:
            for line in pass_lines(passes, width):
                say(line, _STYLE["pass"])
        for line in skip_lines(by_cause(skips)):
            for part in wrap(line.strip(), width, "  ", "    "):
                say(part, _STYLE["skip"])
    if report.measurements and (verbose or measurements):
        columns, rows = measurement_rows(report)
        print_table(console, f"{report.title}: measurements", columns, rows, width, wrap)
    elif report.measurements:
        n = len(report.measurements)
        said = (f"{n} measurement{'s' if n > 1 else ''}: shown with --verbose (or --bench), "
                "kept in --json")
        for line in wrap(said, width, "  ", "    "):
            say(line, "dim")
    if verbose:
        from envcheck.run_info import run_of

        say(run_of(report).line(), "dim")  # one line, whole: the command as it ran
