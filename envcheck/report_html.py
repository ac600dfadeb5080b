"""A Report as HTML, for Jupyter (``Report._repr_html_``): every value escaped, status in colour."""

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


def _details(summary: str, body: str) -> str:
    """A folded section: ``summary`` is escaped here; ``body`` is HTML already."""
    return (
        '<details class="envcheck-fold" style="margin:4px 0">'
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
    rows = (
        (_status(r.status.value), _e(r.check), _e(r.node), _e(r.message), _e(r.fix))
        for r in results
    )
    return _table(caption, ("status", "check", "node", "message", "fix"), rows)


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
    """A report.Report as HTML, the verdict first: a coloured band with the counts, then every
    error, failure and warning with its fix, the tables (a version skew that fails open and
    highlighted, the rest folded), then passes, skips (one line per reason) and measurements,
    each folded in ``<details>``.

    Duck-typed, so this module sits below report.py and imports nothing of it.
    """
    parts = [_verdict(report)]
    issues = [r for s in ("error", "fail", "warn") for r in report.results if r.status.value == s]
    if issues:
        parts.append(_results(f"{report.title}: what is wrong", issues))
    parts += [_extra(t) for t in report.tables]
    passes = [r for r in report.results if r.status.value == "pass"]
    if passes:
        parts.append(_details(f"{len(passes)} passed", _results(report.title, passes)))
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
