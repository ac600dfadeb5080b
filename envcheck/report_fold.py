"""What keeps the text report short on a large cluster: passes counted per check rather than
listed per node, a wide table's long column titles said once, its rows that agree folded into
one, and the host named beside each node an issue is about. Text only: the JSON report keeps
every result, row and column as they are."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# A wide table with more rows than this folds the rows that agree on everything but the
# columns that name them (the host, its address).
FOLD_ROWS = 6
# A column title longer than this ("63 workers: tcp://..., +60 more") is said once, above the
# rows; each row names the column by what comes before its colon ("63 workers").
LONG_TITLE = 24
SHOWN_NAMES = 3  # a folded group names this many of its rows, then "+N more"


def node_with_hosts(node: str, hosts: Mapping[str, str]) -> str:
    """``node`` ("a" or "a, b") with each label's host beside it where ``hosts`` knows it and
    the label does not already say it: "tcp://10.0.0.3:40050 on node2"."""
    if not hosts or not node:
        return node
    named = []
    for label in node.split(", "):
        host = hosts.get(label, "")
        named.append(f"{label} on {host}" if host and host not in label else label)
    return ", ".join(named)


def passed_names(results: Iterable[object]) -> list[str]:
    """Each check once, in order: "check", or "check[node]" for each of up to SHOWN_NAMES
    nodes, or "check[N nodes]" for a check on more (a per-worker smoke test on 64 workers is
    one entry)."""
    nodes: dict[str, list[str]] = {}
    for r in results:
        seen = nodes.setdefault(r.check, [])  # type: ignore[attr-defined]
        if r.node:  # type: ignore[attr-defined]
            seen.append(r.node)  # type: ignore[attr-defined]
    out = []
    for check, where in nodes.items():
        unique = list(dict.fromkeys(where))
        if len(unique) > SHOWN_NAMES:
            out.append(f"{check}[{len(unique)} nodes]")
        else:
            out += [f"{check}[{node}]" for node in unique] or [check]
    return out


def shared_nodes(results: Iterable[object]) -> str:
    """Where every check of ``results`` ran on the same nodes, those nodes as one name ("vm
    (4 ranks)", "a, b", or "5 nodes" for more than SHOWN_NAMES), to be said once for all of
    them; "" where the checks ran on different nodes, or on none named."""
    nodes: dict[str, dict[str, None]] = {}
    for r in results:
        nodes.setdefault(r.check, {})[r.node] = None  # type: ignore[attr-defined]
    sets = list(nodes.values())
    if not sets or "" in sets[0] or any(set(s) != set(sets[0]) for s in sets):
        return ""
    if len(sets[0]) > SHOWN_NAMES:
        return f"{len(sets[0])} nodes"
    return ", ".join(sets[0])


def short_columns(columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """(each column's name in a row, the legend lines for those shortened): a long group
    title is named by the part before its colon, and said whole once."""
    names, legend = [], []
    for c in columns:
        head, sep, rest = c.partition(": ")
        if len(c) > LONG_TITLE and sep and head not in names:
            names.append(head)
            legend.append(f"{head} = {rest}")
        else:
            names.append(c)
    return names, legend


def fold_rows(rows: Sequence[Sequence[str]]) -> list[tuple[list[str], int, tuple[str, ...]]]:
    """Rows as (the names of the rows folded together, the index of the first column their
    cells are of, those cells), first seen first. The naming columns are the leading ones
    whose every value is distinct (a host, its address); a folded group leaves them out. With
    FOLD_ROWS rows or fewer, or no naming column, every row stands alone."""
    alone = [([row[0]], 1, tuple(row[1:])) for row in rows]
    if len(rows) <= FOLD_ROWS:
        return alone
    naming = 0
    for col in range(len(rows[0])):
        if len({row[col] for row in rows}) < len(rows):
            break
        naming = col + 1
    if naming == 0 or naming == len(rows[0]):
        return alone
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(tuple(row[naming:]), []).append(i)
    return [alone[at[0]] if len(at) == 1 else ([rows[i][0] for i in at], naming, shared)
            for shared, at in groups.items()]


def group_name(names: Sequence[str]) -> str:
    """"node1" for one; "7 rows: node1, node2, node3, +4 more" for several."""
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:SHOWN_NAMES])
    more = f", +{len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return f"{len(names)} rows: {shown}{more}"


def agreeing_rows(columns: Sequence[str], rows: Sequence[Sequence[str]]
                  ) -> tuple[list[str], list[Sequence[str]]]:
    """(the rows every column agrees on, as "name value"; the other rows): a row agrees when
    its verdict is "ok" and its two or more other cells hold one value (the skew table's
    packages that are the same on every process). A table without a verdict column: ([],
    rows)."""
    if "verdict" not in columns:
        return [], list(rows)
    at = columns.index("verdict")
    same, rest = [], []
    for row in rows:
        values = {v for i, v in enumerate(row[1:], 1) if i != at}
        if row[at] == "ok" and len(row) > 3 and len(values) == 1:
            same.append(f"{row[0]} {values.pop()}")
        else:
            rest.append(row)
    return same, rest
