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


def to_html(report: Any) -> str:
    """A report.Report as HTML: results, measurements, extra tables, a summary.

    Duck-typed, so this module sits below report.py and imports nothing of it.
    """
    parts = []
    if report.results:
        rows = (
            (_status(r.status.value), _e(r.check), _e(r.node), _e(r.message), _e(r.fix))
            for r in report.results
        )
        parts.append(_table(report.title, ("status", "check", "node", "message", "fix"), rows))
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
        parts.append(_table(f"{report.title}: measurements", columns, rows))
    for t in report.tables:
        parts.append(_table(t.title, t.columns, (tuple(_e(c) for c in row) for row in t.rows)))
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no results"
    parts.append(
        f"<p>{_status(report.status.value)}: {_e(counts)} (exit {int(report.exit_code())})</p>"
    )
    if report.output:
        parts.append(f"<pre>{_e(report.output)}</pre>")
    return "<div>" + "".join(parts) + "</div>"
