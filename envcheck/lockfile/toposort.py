"""conda-lock's topological package order, computed in linear time.

conda-lock's ``Lockfile._toposort`` (through conda's vendored ``toposort``) rescans every
remaining package after each level, and a chain of dependencies has one level per package:
quadratic, 15 of 22 s of writing a 10,000-package chain-shaped lock. This gives the same order
(levels of packages whose dependencies are all in earlier levels, each level sorted by name)
from one pass over the edges; a cycle, which conda breaks by its own rule, is left to conda.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any


def level_order(deps: Mapping[str, set[str]]) -> list[str] | None:
    """conda's ``toposort(deps)`` order, or None when the graph has a cycle.

    Names that appear only as dependencies are nodes without dependencies, as conda adds them.
    """
    graph = {k: set(v) for k, v in deps.items()}
    if "python" in graph:  # conda's special case: python before pip, not the reverse
        graph["python"].discard("pip")
    for k, v in graph.items():
        v.discard(k)  # self dependencies are ignored
    nodes = set(graph)
    for v in graph.values():
        nodes |= v
    waiting = {n: len(graph.get(n, ())) for n in nodes}
    dependents: dict[str, list[str]] = defaultdict(list)
    for k, v in graph.items():
        for d in v:
            dependents[d].append(k)
    level = [n for n, w in waiting.items() if w == 0]
    out: list[str] = []
    while level:
        level.sort()
        out += level
        nxt = []
        for n in level:
            for m in dependents.get(n, ()):
                waiting[m] -= 1
                if waiting[m] == 0:
                    nxt.append(m)
        level = nxt
    return out if len(out) == len(nodes) else None


def toposorted(package: Sequence[Any]) -> list[Any]:
    """``Lockfile._toposort(package)``: by platform, conda before pip, each in level order."""
    final: list[Any] = []
    for platform in sorted({d.platform for d in package}):
        for manager in ("conda", "pip"):
            lookup: dict[str, set[str]] = {}
            packages: dict[str, Any] = {}
            for d in package:
                if d.platform == platform and d.manager == manager:
                    lookup[d.name] = set(d.dependencies)
                    packages[d.name] = d
            order = level_order(lookup)
            if order is None:  # a cycle: conda's own rule breaks it
                from conda_lock.interfaces.vendored_conda import toposort

                order = toposort(lookup)
            final += [packages[n] for n in order if n in packages]
    return final
