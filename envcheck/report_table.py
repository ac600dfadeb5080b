"""A report's table in the text report, at the report's width (envcheck.width): as it is
where it fits; else narrowed until it does, keeping its columns (long column titles said once
above it, the skew table's rows that agree on every process said once above it, rows that
agree on all but their names folded, columns the same on every row said once above it, and
at last its cells wrapped at spaces); else, so narrowed, one wrapped line per row. A column of
a group of workers or ranks is named by the group's count; its members are said once, above
the table."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, List, Tuple

from envcheck.report_fold import agreeing_rows, fold_rows, group_name, short_columns

Rows = List[Tuple[str, ...]]  # typing's: evaluated at import, on Python 3.8 too


def widths(columns: Sequence[str], rows: Sequence[Sequence[str]], whole: bool = True
           ) -> list[int]:
    """Each column's width: its widest cell (``whole``), else its title or its longest word,
    whichever is wider (its cells wrapped at spaces, the title on one line)."""
    if whole:
        return [max(len(str(x)) for x in col) for col in zip(columns, *rows)]
    return [max([len(title), *(len(w) for x in col for w in str(x).split())])
            for title, *col in zip(columns, *rows)]


def fits(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int,
         whole: bool = True) -> bool:
    """Whether a boxed table of these cells is at most ``width`` wide (a cell's width, a
    space either side and a rule between columns); ``whole``: as ``widths``."""
    sizes = widths(columns, rows, whole)
    return sum(sizes) + 3 * len(sizes) + 1 <= width


@dataclasses.dataclass(frozen=True)
class Shape:
    """A table as it prints: lines said above it, its columns and rows, and how: ``table``
    (cells whole), ``wrapped`` (cells wrapped at spaces, each column at least its longest
    word) or ``rows`` (one line per row: no table fits)."""

    above: list[str]
    columns: tuple[str, ...]
    rows: Rows
    kind: str = "table"


def narrowed(columns: tuple[str, ...], rows: Rows, width: int) -> Shape:
    """The table as it is where it fits ``width``, else narrowed step by step (the module's
    docstring) until it does, its cells at last wrapped at spaces; where nothing fits, the
    narrowest as rows."""
    if fits(columns, rows, width):
        return Shape([], columns, rows)
    names, above = short_columns(columns)
    cols = tuple(names)
    same, kept = agreeing_rows(columns, rows)
    if same:  # the skew table's packages the same on every process: said once
        above.append(f"the same on every one: {', '.join(same)}")
        rows = [tuple(r) for r in kept]
    if not rows or fits(cols, rows, width):
        return Shape(above, cols, rows)
    folded = fold_rows(rows)
    if len(folded) < len(rows):
        rows = [(group_name(who), *([""] * (first - 1)), *cells) for who, first, cells in folded]
        if fits(cols, rows, width):
            return Shape(above, cols, rows)
    if len(rows) > 1:
        keep = [i for i in range(len(cols)) if len({r[i] for r in rows}) > 1] or [0]
        same = [f"{cols[i]} {rows[0][i]}" for i in range(len(cols))
                if i not in keep and rows[0][i]]
        if same:
            above = [*above, f"the same on every row: {', '.join(same)}"]
        cols = tuple(cols[i] for i in keep)
        rows = [tuple(r[i] for i in keep) for r in rows]
        if fits(cols, rows, width):
            return Shape(above, cols, rows)
    if fits(cols, rows, width, whole=False):
        return Shape(above, cols, rows, "wrapped")
    return Shape(above, cols, rows, "rows")


def shared_out(shape: Shape, width: int) -> list[int]:
    """Column widths for ``shape``'s wrapped cells within ``width``: each column its longest
    word or title, then what is left given to the columns that need least to be whole first
    (so that as few as possible wrap)."""
    least = widths(shape.columns, shape.rows, whole=False)
    whole = widths(shape.columns, shape.rows)
    sizes = list(least)
    spare = width - (3 * len(sizes) + 1) - sum(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: whole[i] - least[i]):
        more = min(whole[i] - sizes[i], max(spare, 0))
        sizes[i] += more
        spare -= more
    return sizes


def row_lines(shape: Shape) -> list[str]:
    """Each row as one line, unwrapped: ``first cell: column value, ...`` (empty cells left
    out)."""
    names = shape.columns
    return [f"{row[0]}: " + ", ".join(f"{c} {v}" for c, v in zip(names[1:], row[1:]) if v)
            for row in shape.rows]


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
    for line in shape.above + (row_lines(shape) if shape.kind == "rows" else []):
        for part in wrap(line, width, "  ", "    "):
            say(part)
    if not shape.rows or shape.kind == "rows":
        return
    t = Table()
    wrapped = shape.kind == "wrapped"
    sizes = shared_out(shape, width) if wrapped else [None] * len(shape.columns)
    for col, size in zip(shape.columns, sizes):
        t.add_column(col, no_wrap=not wrapped, width=size)
    for row in shape.rows:
        t.add_row(*(Text(x) for x in row))
    console.print(t, width=width)
