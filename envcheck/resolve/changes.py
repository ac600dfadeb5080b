"""Package changes between two locks: one implementation for `build` and `diff`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Tuple

from envcheck.report import Table
from envcheck.text import printable

Key = Tuple[str, str, str]  # platform, manager, name


@dataclass(frozen=True)
class Change:
    platform: str
    manager: str
    name: str
    kind: str  # added / removed / changed
    old: str
    new: str


def compare(before: Mapping[Key, str], after: Mapping[Key, str]) -> list[Change]:
    """What was added, removed or changed (version and build) per platform, sorted."""
    changes = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        kind = "added" if a is None else "removed" if b is None else "changed"
        changes.append(Change(*key, kind=kind, old=a or "", new=b or ""))
    return changes


def version_build(version: str, build: str | None) -> str:
    return f"{version}" + (f" {build}" if build else "")


def changes_table(
    changes: Iterable[tuple[str, Change]], title: str = "changes against the previous lock"
) -> Table:
    """(recipe or lock name, change) rows as the report's table."""
    rows = tuple((n, c.platform, c.manager, c.name, c.kind, c.old, c.new) for n, c in changes)
    cols = ("recipe", "platform", "manager", "package", "change", "old", "new")
    return Table(title, cols, rows)


def _cell(text: str) -> str:
    """Text from a lock as one markdown table cell: control characters escaped (a NUL or a
    terminal escape never reaches the review), a pipe kept from ending the cell."""
    return printable(text).replace("\n", "\\n").replace("|", "\\|")


def _code(text: str) -> str:
    """A file name as inline code: escaped as a cell, a backtick kept from ending the code."""
    return "`" + _cell(text).replace("`", "'") + "`"


def markdown(changes: Iterable[Change], old: str, new: str) -> str:
    """A GitHub-flavoured markdown table for code review, grouped by platform."""
    changes = list(changes)
    counts = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "changed")}
    out = [
        f"### {_code(old)} -> {_code(new)}",
        "",
        ", ".join(f"{n} {k}" for k, n in counts.items()) if changes else "no changes",
    ]
    if changes:
        out += ["", "| platform | package | change | old | new |", "|---|---|---|---|---|"]
        for c in changes:
            name = c.name if c.manager == "conda" else f"{c.name} ({c.manager})"
            cells = (c.platform, name, c.kind, c.old, c.new)
            out.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return "\n".join(out) + "\n"
