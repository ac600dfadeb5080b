"""A clash uv proved, in recipe terms: the "X depends on Y" steps of uv's derivation joined
into entry -> requirement -x- clashing requirement <- entry."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from packaging.utils import canonicalize_name

_REQ = r"[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?(?:[<>=!~]=?[^\s,]+(?:,\s?[<>=!~]=?[^\s,]+)*)?"
_DEPENDS = re.compile(rf"({_REQ}) depends on ({_REQ})")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def _name(req: str) -> str:
    m = _NAME.match(req)
    return canonicalize_name(m.group(0)) if m else req


def _clean(req: str) -> str:
    return req.rstrip(".,").replace(", ", ",")


def steps(reasoning: Sequence[str]) -> list[tuple[str, str]]:
    """uv's "A depends on B" facts, in order, each once."""
    out: dict[tuple[str, str], None] = {}
    for sentence in reasoning:
        for m in _DEPENDS.finditer(sentence):
            if not m.group(1).startswith(("you", "your")):
                out[(_clean(m.group(1)), _clean(m.group(2)))] = None
    return list(out)


def _paths(start: str, facts: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """Each package reachable from ``start`` by uv's facts, with the facts on the way."""
    paths: dict[str, list[tuple[str, str]]] = {start: []}
    todo = [start]
    while todo:
        at = todo.pop(0)
        for a, b in facts:
            if _name(a) == at and _name(b) not in paths:
                paths[_name(b)] = [*paths[at], (a, b)]
                todo.append(_name(b))
    return paths


def chain(reasoning: Sequence[str], entries: Mapping[str, str]) -> str:
    """'entry' -> A requires B -x- B' required by C <- 'entry2', the shortest pair of paths
    from two entries to one package; "" when uv's facts join no two entries."""
    facts = steps(reasoning)
    reach = {name: _paths(name, facts) for name in entries}
    best: tuple[int, str] | None = None
    names = list(entries)
    for i, e1 in enumerate(names):
        for e2 in names[i + 1:]:
            for q in reach[e1].keys() & reach[e2].keys():
                p1, p2 = reach[e1][q], reach[e2][q]
                if not p1 and not p2:
                    continue
                text = _join(entries[e1], p1, entries[e2], p2)
                if best is None or len(p1) + len(p2) < best[0]:
                    best = (len(p1) + len(p2), text)
    return best[1] if best else ""


def _join(e1: str, p1: list[tuple[str, str]], e2: str, p2: list[tuple[str, str]]) -> str:
    if not p1:  # the first entry is itself the clashing requirement
        (e1, p1), (e2, p2) = (e2, p2), (e1, p1)
    head = f"{e1!r} -> " + " -> ".join(f"{a} requires {b}" for a, b in p1)
    if not p2:
        return f"{head} -x- {e2} <- {e2!r}"
    last_a, last_b = p2[-1]
    up = " <- ".join(a for a, _ in reversed(p2[:-1]))
    return f"{head} -x- {last_b} required by {last_a}" + (f" <- {up}" if up else "") + f" <- {e2!r}"
