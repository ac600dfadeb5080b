"""The release's pins as edges: a pin binds a recipe only where a package of it requires the
pinned name, directly or through another (pure functions).

The record's ``requires`` fact holds, per release, each RAPIDS package's own requirements
(the wheels' Requires-Dist, the conda recipes' run section): ``cuml -> rapids-dask-dependency
-> dask ==2025.7.0``. A recipe entry whose package the data has no requirements of binds the
release's pin as before (the data cannot say it does not); a package reached along the way
whose requirements the data lacks ends its path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from envcheck.resolve.record.entries import Entry
from envcheck.resolve.record.table import Release


@dataclass(frozen=True)
class Chain:
    """A path of requirements from a recipe's package to a pinned name."""

    start: str  # the recipe's package
    hops: tuple[tuple[str, str, str], ...]  # (package required, its spec, pointer) in order

    @property
    def spec(self) -> str:
        return self.hops[-1][1]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(p for _, _, p in self.hops)

    def text(self, release: Release, graph: dict[str, Any]) -> str:
        """'cuml 25.08 -> rapids-dask-dependency 25.8.0 -> dask ==2025.7.0'; one hop reads
        'cudf 25.08 requires pandas <2.4.0dev0,>=2.0'."""
        if len(self.hops) == 1:
            name, spec, _ = self.hops[0]
            return f"{self.start} {release.version} requires {name} {spec}".rstrip()
        parts = [f"{self.start} {release.version}"]
        for name, _spec, _ in self.hops[:-1]:
            parts.append(f"{name} {graph[name]['version']}" if name in graph else name)
        name, spec, _ = self.hops[-1]
        parts.append(f"{name} {spec}".rstrip())
        return " -> ".join(parts)


def graph(release: Release) -> dict[str, Any] | None:
    """package -> {"version", "requires": [[name, spec, pointer], ...]}; None: not in the data."""
    fact = release.get("requires")
    return fact.value if fact.known else None


def chain(g: dict[str, Any], start: str, target: str) -> Chain | None:
    """The shortest path of requirements from ``start`` to ``target`` (breadth first)."""
    seen = {start}
    todo: deque[tuple[str, tuple[tuple[str, str, str], ...]]] = deque([(start, ())])
    while todo:
        pkg, path = todo.popleft()
        for name, spec, ptr in g.get(pkg, {}).get("requires", ()):
            hop = (*path, (name, spec, ptr))
            if name == target:
                return Chain(start, hop)
            if name not in seen:
                seen.add(name)
                todo.append((name, hop))
    return None


@dataclass(frozen=True)
class Binding:
    """How a release's pin of ``name`` binds a recipe: the chains that reach it, and whether
    some recipe package has no requirements in the data (then the release's pin binds)."""

    chains: tuple[Chain, ...]
    unknown: tuple[str, ...]  # recipe packages the data has no requirements of

    @property
    def binds(self) -> bool:
        return bool(self.chains or self.unknown)


def binding(
    release: Release, entries: Sequence[Entry], name: str, rapids: Collection[str]
) -> Binding:
    """Which of the recipe's RAPIDS packages (names in ``rapids``) require ``name``."""
    g = graph(release)
    starts = list(dict.fromkeys(e.name for e in entries if e.name in rapids and e.name != name))
    if g is None:
        return Binding((), tuple(starts))
    found = tuple(c for s in starts if s in g and (c := chain(g, s, name)) is not None)
    return Binding(found, tuple(s for s in starts if s not in g))
