"""A report's table in the text report, at the report's width (envcheck.width): as it is
where it fits; else narrowed until it does, keeping its columns (long column titles said once
above it, the skew table's rows that agree on every process said once above it, rows that
agree on all but their names folded, columns the same on every row said once above it); else,
where nothing narrows it enough, one wrapped line per row. A column of a group of workers or
ranks is named by the group's count; its members are said once, above the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envcheck.report_fold import agreeing_rows, fold_rows, group_name, short_columns

Rows = list[tuple[str, ...]]


def fits(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> bool:
    """Whether a boxed table of these cells is at most ``width`` wide (a cell's width, a
    space either side and a rule between columns)."""
    widths = [max(len(str(x)) for x in col) for col in zip(columns, *rows)]
    return sum(widths) + 3 * len(widths) + 1 <= width


def narrowed(columns: tuple[str, ...], rows: Rows, width: int
             ) -> tuple[list[str], tuple[str, ...], Rows] | None:
    """(lines said above the table, its columns, its rows): the table as it is where it fits
    ``width``, else narrowed step by step (the module's docstring) until it does; None when
    even the narrowest does not fit."""
    if fits(columns, rows, width):
        return [], columns, rows
    names, above = short_columns(columns)
    cols = tuple(names)
    same, kept = agreeing_rows(columns, rows)
    if same:  # the skew table's packages the same on every process: said once
        above.append(f"the same on every one: {', '.join(same)}")
        if not kept:
            return above, cols, []
        rows = [tuple(r) for r in kept]
    if fits(cols, rows, width):
        return above, cols, rows
    folded = fold_rows(rows)
    if len(folded) < len(rows):
        rows = [(group_name(who), *([""] * (first - 1)), *cells) for who, first, cells in folded]
        if fits(cols, rows, width):
            return above, cols, rows
    if len(rows) > 1:
        keep = [0, *(i for i in range(1, len(cols)) if len({r[i] for r in rows}) > 1)]
        same = [f"{cols[i]} {rows[0][i]}" for i in range(len(cols))
                if i not in keep and rows[0][i]]
        if same:
            above = [*above, f"the same on every row: {', '.join(same)}"]
        cols = tuple(cols[i] for i in keep)
        rows = [tuple(r[i] for i in keep) for r in rows]
        if fits(cols, rows, width):
            return above, cols, rows
    return None


def row_lines(columns: tuple[str, ...], rows: Rows) -> list[str]:
    """A table too wide for any narrowing as one line per row (``first cell: column value,
    ...``), unwrapped: a long column title is said once first; rows whose every process
    agrees are one line, and rows that agree on all but their names fold into one."""
    names, legend = short_columns(columns)
    same, rest = agreeing_rows(columns, rows)
    lines = list(legend)
    if same:
        lines.append(f"the same on every one: {', '.join(same)}")
    for who, first, cells in fold_rows(rest):
        said = ", ".join(f"{c} {v}" for c, v in zip(names[first:], cells) if str(v))
        lines.append(f"{group_name(who)}: {said}")
    return lines


def print_table(console: Any, title: str, columns: tuple[str, ...], rows: Rows, width: int,
                wrap: Any) -> None:
    """``title`` on its own line, then the table (``narrowed``) or its rows as lines, each
    line wrapped by ``wrap(text, width, first_indent, rest_indent)``."""
    from rich.table import Table
    from rich.text import Text

    def say(line: str) -> None:
        console.print(Text(line), soft_wrap=True, highlight=False)

    for line in wrap(title, width, "", "  "):
        say(line)
    shape = narrowed(columns, rows, width)
    if shape is None:
        for line in row_lines(columns, rows):
            for part in wrap(line, width, "  ", "    "):
                say(part)
        return
    above, cols, body = shape
    for line in above:
        for part in wrap(line, width, "  ", "    "):
            say(part)
    if not body:
        return
    t = Table()
    for col in cols:
        t.add_column(col, no_wrap=True)
    for row in body:
        t.add_row(*(Text(x) for x in row))
    console.print(t, width=width)
