"""Which RAPIDS releases a recipe entry admits: the calendar releases since 21.06 and LATER."""

from __future__ import annotations

from collections.abc import Iterable

from envcheck.resolve.record.entries import Entry
from envcheck.resolve.record.specs import NUMBER, parse_version, version_spec
from envcheck.resolve.record.table import Record, release_key

# stands for every release after those the record covers and the recipe names
LATER = "99.12"


def release_universe(record: Record) -> frozenset[str]:
    """Every RAPIDS release a spec could mean: the calendar releases since 21.06 (even months,
    through the year after the newest the record covers) and LATER, which stands for the rest."""
    top = max(int(r.split(".")[0]) for r in record.releases) + 1
    out = {f"{y}.{m:02d}" for y in range(21, top + 1) for m in range(2, 13, 2) if (y, m) >= (21, 6)}
    return frozenset({*out, LATER})


def _probes_in(rel: str, spec: str) -> list[str]:
    """Versions of release ``rel`` to try a spec on: its patch releases and every bound the
    spec names inside it (a range can begin or end within a release: '>=22.8.2')."""
    yy, mm = (int(x) for x in rel.split("."))
    out = [f"{rel}.00", f"{rel}.01", f"{rel}.02", f"{rel}.99"]
    for n in NUMBER.findall(spec):
        parts = n.split(".")
        if len(parts) >= 2 and int(parts[0]) == yy and int(parts[1]) == mm:
            out += [n, f"{n}.0.1", f"{n}.1"]
    return out


def admitted_releases(entry: Entry, universe: frozenset[str]) -> frozenset[str]:
    """The releases of ``universe`` of which some version satisfies the entry's version."""
    if entry.version is None:
        return universe
    spec = version_spec(entry.version)
    probes = {r: _probes_in(r, entry.version) for r in universe}
    return frozenset(r for r in universe if any(spec.matches(parse_version(v)) for v in probes[r]))


def describe(releases: Iterable[str]) -> str:
    """'22.08' / '23.08, 23.10 and later releases'."""
    rels = sorted(releases, key=release_key)
    later = LATER in rels
    named = [r for r in rels if r != LATER]
    text = ", ".join(named[:6]) + (f" ... {named[-1]}" if len(named) > 6 else "")
    if later:
        text = f"{text} and later releases" if named else "releases after the record's newest"
    return text
