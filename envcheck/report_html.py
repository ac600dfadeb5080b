"""A Report as HTML, for Jupyter (``Report._repr_html_``) and ``--html FILE`` (``page``): every
value escaped, status in colour."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from envcheck.text import printable

# readable on light and dark notebook themes
COLOURS = {
    "pass": "#1a7f37",
    "warn": "#9a6700",
    "fail": "#cf222e",
    "skip": "#6e7781",
    "error": "#8250df",
}
_CELL = "padding:2px 8px;text-align:left;vertical-align:top"


def _e(value: object) -> str:
    return html.escape(printable(str(value)), quote=True)


def _status(status: str) -> str:
    colour = COLOURS.get(status, "inherit")
    return f'<span style="color:{colour};font-weight:bold">{_e(status)}</span>'


def _table(caption: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """``rows`` hold HTML already escaped; ``caption`` and ``columns`` are escaped here."""
    head = "".join(f'<th style="{_CELL}">{_e(c)}</th>' for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in row) + "</tr>"
        for row in rows
    )
    return (
        f'<table class="envcheck-report"><caption style="text-align:left;font-weight:bold">'
        f"{_e(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _details(summary: str, body: str, open_: bool = False) -> str:
    """A folded section (``open_``: unfolded): ``summary`` is escaped here; ``body`` is HTML
    already."""
    return (
        f'<details class="envcheck-fold" style="margin:4px 0"{" open" if open_ else ""}>'
        f'<summary style="cursor:pointer">{_e(summary)}</summary>{body}</details>'
    )


def _verdict(report: Any) -> str:
    """The band at the top: the worst status's colour, white text, the counts and exit code."""
    colour = COLOURS.get(report.status.value, "#6e7781")
    counts = report.counts
    order = ("error", "fail", "warn", "pass", "skip")
    listed = ", ".join(f"{counts[s]} {s}" for s in order if counts.get(s)) or "no results"
    return (
        f'<div class="envcheck-verdict" style="background:{colour};color:#fff;'
        f'padding:8px 12px;font-weight:bold;font-size:1.1em">'
        f"{_e(report.status.value.upper())} &mdash; {_e(report.title)}: {_e(listed)} "
        f"(exit {int(report.exit_code)})</div>"
    )


def _results(caption: str, results: Sequence[Any]) -> str:
    """Results as a table; the fix column only where a row has a fix."""
    fixes = any(r.fix for r in results)
    rows = (
        (_status(r.status.value), _e(r.check), _e(r.node), _e(r.message),
         *((_e(r.fix),) if fixes else ()))
        for r in results
    )
    columns = ("status", "check", "node", "message", *(("fix",) if fixes else ()))
    return _table(caption, columns, rows)


def _where(results: Sequence[Any]) -> str:
    """'skew.distributed on 4 nodes, gpus[n1]': the rows one fix is for, each check once."""
    nodes: dict[str, list[str]] = {}
    for r in results:
        nodes.setdefault(r.check, []).append(r.node)
    return ", ".join(
        f"{check}[{ns[0]}]" if len(ns) == 1 and ns[0] else
        check if len(ns) == 1 else f"{check} on {len(ns)} nodes"
        for check, ns in nodes.items()
    )


def _issues(caption: str, results: Sequence[Any]) -> str:
    """What is wrong, then each distinct fix once with the checks it fixes (a fix shared by
    many rows, one skewed package on every worker, is said once)."""
    fixes: dict[str, list[Any]] = {}
    for r in results:
        if r.fix:
            fixes.setdefault(r.fix, []).append(r)
    number = {fix: n for n, fix in enumerate(fixes, 1)}
    rows = (
        (_status(r.status.value), _e(r.check), _e(r.node), _e(r.message),
         f"fix {number[r.fix]}" if r.fix else "")
        for r in results
    )
    table = _table(caption, ("status", "check", "node", "message", "fix"), rows)
    if not fixes:
        return table
    items = "".join(
        f"<li><strong>{_e(fix)}</strong> ({_e(_where(rows))})</li>"
        for fix, rows in fixes.items()
    )
    return f'{table}<ol class="envcheck-fixes" style="margin:4px 0 8px">{items}</ol>'


def _passes(report: Any, passes: Sequence[Any], open_: bool) -> str:
    """What passed, one section per group ('node', 'cluster', 'smoke'): shown open on a page
    with nothing wrong (what passed is then the news), folded below the issues otherwise."""
    groups: dict[str, list[Any]] = {}
    for r in passes:
        groups.setdefault(r.group or "checks", []).append(r)
    sections = "".join(
        _details(f"{len(rs)} passed ({group})", _results(f"{report.title}: {group}", rs),
                 open_=open_)
        for group, rs in groups.items()
    )
    return f'<div class="envcheck-passes">{sections}</div>'


def _run(report: Any) -> str:
    """The header line: which envcheck ran, where, when, with which command line."""
    from envcheck.run_info import run_of

    run = run_of(report)
    return (
        '<div class="envcheck-run" style="color:#57606a;font-size:0.9em;padding:4px 12px">'
        f"envcheck {_e(run.envcheck)} on <strong>{_e(run.host)}</strong> at {_e(run.time)}: "
        f"<code>{_e(run.command)}</code></div>"
    )


def _skips(skips: Sequence[Any]) -> str:
    by_reason: dict[str, list[str]] = {}
    for r in skips:
        by_reason.setdefault(r.message, []).append(f"{r.check}[{r.node}]" if r.node else r.check)
    items = "".join(
        f"<li>{_status('skip')} {len(names)} &times; {_e(reason)}: "
        f"{_e(', '.join(dict.fromkeys(names)))}</li>"
        for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1]))
    )
    reasons = f"{len(by_reason)} reason{'s' if len(by_reason) > 1 else ''}"
    return _details(f"{len(skips)} skipped ({reasons})", f"<ul>{items}</ul>")


def _extra(t: Any) -> str:
    """A free-form table; one with a ``verdict`` column that is not all "ok" (the version
    skew matrix) is shown open with its offending rows highlighted, any other is folded."""
    judged = bool(t.columns) and t.columns[-1] == "verdict"
    bad = [judged and str(row[-1]) not in ("ok", "") for row in t.rows]
    rows = []
    for row, is_bad in zip(t.rows, bad):
        cells = tuple(_e(c) for c in row)
        if is_bad:
            colour = COLOURS.get(str(row[-1]), COLOURS["fail"])
            cells = tuple(f'<span style="background:{colour}22;font-weight:bold">{c}</span>'
                          for c in cells)
        rows.append(cells)
    table = _table(t.title, t.columns, rows)
    if any(bad):
        return (f'<div class="envcheck-highlight" style="border-left:6px solid '
                f'{COLOURS["fail"]};padding-left:8px;margin:6px 0">{table}</div>')
    return _details(t.title, table)


def to_html(report: Any) -> str:
    """A report.Report as HTML, the verdict first: a coloured band with the counts, a line
    saying which envcheck ran where, when and how; then every error, failure and warning, each
    distinct fix once; the tables (a version skew that fails open and highlighted, the rest
    folded); then passes by group (open when nothing is wrong), skips (one line per reason)
    and measurements, folded in ``<details>``.

    Duck-typed, so this module sits below report.py and imports nothing of it.
    """
    parts = [_verdict(report), _run(report)]
    issues = [r for s in ("error", "fail", "warn") for r in report.results if r.status.value == s]
    if issues:
        parts.append(_issues(f"{report.title}: what is wrong", issues))
    parts += [_extra(t) for t in report.tables]
    passes = [r for r in report.results if r.status.value == "pass"]
    if passes:
        parts.append(_passes(report, passes, open_=not issues))
    skips = [r for r in report.results if r.status.value == "skip"]
    if skips:
        parts.append(_skips(skips))
    if report.measurements:
        rows = (
            (
                _e(m.name),
                _e(m.node),
                _e(f"{m.value:.4g} {m.unit}"),
                "" if m.reference is None else _e(f"{m.reference:.4g} {m.unit}"),
                _e(m.verdict),
            )
            for m in report.measurements
        )
        columns = ("name", "node", "value", "reference", "verdict")
        table = _table(f"{report.title}: measurements", columns, rows)
        parts.append(_details(f"{len(report.measurements)} measurements", table))
    if report.output:
        parts.append(f"<pre>{_e(report.output)}</pre>")
    return '<div class="envcheck-report-view">' + "".join(parts) + "</div>"


def page(report: Any) -> str:
    """A whole web page of the report (``--html FILE``)."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(report.title)}: {_e(report.status.value)}</title></head>"
        '<body style="font-family:system-ui,sans-serif;margin:0 0 24px">'
        f"{to_html(report)}</body></html>\n"
    )
