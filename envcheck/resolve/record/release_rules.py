"""The rules one RAPIDS release (or patch release) sets a recipe's entries: pins, ranges,
Python, CUDA, build strings and glibc."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from envcheck.resolve.record.cuda import cuda_rules
from envcheck.resolve.record.edges import binding, chain, graph
from envcheck.resolve.record.entries import (
    ADVICE_RANGES,
    EXACT,
    META_RANGES,
    TOOLKITS,
    UCXX,
    Entry,
)
from envcheck.resolve.record.finding import ERROR, WARN, Finding
from envcheck.resolve.record.specs import admits_pin, matches, minors, overlaps
from envcheck.resolve.record.table import Release, Value


def release_rules(
    release: Release,
    anchor: str,
    entries: Sequence[Entry],
    system: Mapping[str, str],
    drivers: Mapping[str, Value] | None = None,
    rapids: Collection[str] = (),
) -> list[Finding]:
    """``rapids``: the names that carry a RAPIDS release (the recipe's RAPIDS packages)."""
    rel = release.label
    out: list[Finding] = []
    by_name = {e.name: e for e in entries}

    def clash(rule: str, sev: str, e: Entry, fact: Value, what: str) -> None:
        out.append(
            Finding(
                rule,
                sev,
                f"recipe entry {e.text!r} contradicts RAPIDS {rel} ({anchor!r}): {what}",
                (anchor, e.text),
                fact.sources,
            )
        )

    _pins(release, by_name, entries, rapids, clash)
    _ranges(release, entries, by_name, rapids, clash)
    py = release.get("python")
    for e in (e for e in entries if e.name == "python"):
        if e.version and py.known and not minors(e.version, py.value):
            clash("rapids.python", ERROR, e, py, f"it was built for Python {', '.join(py.value)}")
    out += cuda_rules(release, anchor, by_name, system, drivers or {}, clash)
    out += _build_rules(release, entries, by_name)
    glibc, floor = system.get("glibc"), release.get("glibc")
    if glibc and floor.known and matches(f"<{floor.value}", glibc):
        out.append(
            Finding(
                "rapids.glibc",
                ERROR,
                f"RAPIDS {rel} needs glibc >= {floor.value} ({floor.note}); the recipe targets "
                f"glibc {glibc}",
                (anchor,),
                floor.sources,
            )
        )
    return out


def _ranges(release, entries, by_name, rapids, clash) -> None:  # type: ignore[no-untyped-def]
    """Bounds on the recipe's other entries: those a package of the recipe requires, through
    its chain of requirements; where some package's requirements are not in the data, the
    release's run requirements and meta-package ranges as well; versions.yaml advice (warn)
    on names nothing of the recipe requires."""
    rel = release.label
    g = graph(release) or {}
    mine = sorted({e.name for e in entries if e.name in rapids})
    unknown = [n for n in mine if n not in g]
    required = set()  # names a package the recipe installs requires: advice on them is moot
    for e in entries:
        if not e.version or e.name in rapids or e.name in EXACT:
            continue
        for c in (c for n in mine if n in g and (c := chain(g, n, e.name)) is not None):
            required.add(e.name)
            if c.spec and not overlaps(e.version, c.spec):
                clash("rapids.range", ERROR, e, Value(c.spec, c.sources), c.text(release, g))
                break
    for owner, name, fact in run_pins(release) if unknown else ():
        if (owner in g and owner in mine) or not installs(owner, by_name):
            continue  # the edges said it, or the recipe does not install its owner
        for e in (e for e in entries if e.name == name and e.version and fact.known):
            if not overlaps(e.version, str(fact.value)):
                what = f"{owner} {rel} requires {name} {fact.value} ({fact.note})"
                clash("rapids.range", ERROR, e, fact, what)
                required.add(name)
    series = release.get("ucxx_series")
    for e in entries:
        if e.name in UCXX and e.version and series.known:
            if not overlaps(e.version, str(series.value)):
                what = f"its UCXX is {series.value} ({series.note})"
                clash("rapids.ucxx", ERROR, e, series, what)
            required.add(e.name)
    for names, sev in ((META_RANGES if unknown else (), ERROR), (ADVICE_RANGES, WARN)):
        for name in names:
            fact = release.get(name)
            if name in required:  # a requirement already said it, with its owner
                continue
            for e in (e for e in entries if e.name == name):
                if e.version and fact.known and not overlaps(e.version, str(fact.value)):
                    where = "requires" if sev == ERROR else "was built and tested with"
                    clash("rapids.range", sev, e, fact, f"the release {where} {name} {fact.value}")


def _pins(release, by_name, entries, rapids, clash) -> None:  # type: ignore[no-untyped-def]
    """dask, distributed, dask-expr through the packages that require them; xgboost."""
    for name in EXACT:
        e = by_name.get(name)
        if e and e.version:
            _pin(release, e, entries, rapids, clash)
    xgb, e = release.get("xgboost"), by_name.get("xgboost")
    if e and e.version and xgb.known:
        want = str(xgb.value).split(" ")[0]
        if not matches(e.version, want):
            what = f"rapids-xgboost {release.label} pins xgboost {xgb.value}"
            clash("rapids.pin", ERROR, e, xgb, what)


def _pin(release, e, entries, rapids, clash) -> None:  # type: ignore[no-untyped-def]
    """The release's pin of ``e.name`` where a package of the recipe requires it: each chain's
    own spec (cuml 25.08 -> rapids-dask-dependency 25.8.0 -> dask ==2025.7.0), and the
    release's pin where a package's requirements are not in the data."""
    how = binding(release, entries, e.name, rapids)
    g = graph(release) or {}
    for c in how.chains:
        if c.spec and not admits_pin(e.version, c.spec):
            why = Value(c.spec, c.sources)
            clash("rapids.pin", ERROR, e, why, c.text(release, g))
            return
    fact = release.get(e.name)
    if how.unknown and fact.known and not admits_pin(e.version, str(fact.value)):
        who = ", ".join(how.unknown)
        clash("rapids.pin", ERROR, e, fact, f"the release pins {e.name} {fact.value} (for {who})")


# what a package requires at install that the recipe may not name: cuml and cugraph require
# raft-dask, whose ucx-py pin then holds
REQUIRED_BY = {"raft-dask": ("cuml", "cugraph")}


def installs(owner: str, by_name: Mapping[str, Entry]) -> bool:
    """Whether the recipe installs ``owner`` (named, through `rapids`, or required)."""
    return (
        owner in by_name
        or "rapids" in by_name
        or any(n in by_name for n in REQUIRED_BY.get(owner, ()))
    )


def run_pins(release: Release) -> list[tuple[str, str, Value]]:
    """(owner, name, range) of the release's "run:OWNER:NAME" facts: OWNER requires NAME."""
    out = []
    for field, fact in release.facts.items():
        kind, _, rest = field.partition(":")
        owner, _, name = rest.partition(":")
        if kind == "run" and name:
            out.append((owner, name, fact))
    return out


_PY_TAG = re.compile(r"(?<![a-z])py(\d)(\d{1,2})(?!\d)")


_CUDA_TAG = re.compile(r"cuda_?(\d{2})(?!\d)")


def _build_rules(
    release: Release, entries: Sequence[Entry], by_name: Mapping[str, Entry]
) -> list[Finding]:
    """A RAPIDS entry's build string names its Python and CUDA ('py39', 'cuda_11'): it must
    agree with the release and with the recipe's python / toolkit entries."""
    members = release.get("members")
    names = {"rapids", *(members.value if members.known else ())}
    py, majors = release.get("python"), release.get("cuda_majors")
    out: list[Finding] = []
    for e in entries:
        if e.name not in names or not e.build:
            continue
        tag = _PY_TAG.search(e.build)
        if tag:
            want = f"{tag.group(1)}.{tag.group(2)}"
            pe = by_name.get("python")
            if pe and pe.version and not minors(pe.version, [want]):
                out.append(_build_clash(e, pe, f"Python {want}", release, ()))
            elif py.known and want not in py.value:
                out.append(_build_clash(e, None, f"Python {want}", release, py.sources))
        tag = _CUDA_TAG.search(e.build)
        if tag:
            major = tag.group(1)
            for name in TOOLKITS:
                te = by_name.get(name)
                if (
                    te
                    and te.version
                    and not minors(te.version, [f"{major}.{n}" for n in range(10)])
                ):
                    out.append(_build_clash(e, te, f"CUDA {major}", release, ()))
            if majors.known and major not in majors.value:
                out.append(_build_clash(e, None, f"CUDA {major}", release, majors.sources))
    return out


def _build_clash(
    e: Entry, other: Entry | None, what: str, release: Release, sources: tuple[str, ...]
) -> Finding:
    against = (
        f"the recipe's {other.text!r}"
        if other
        else f"RAPIDS {release.version}, which was not built for {what}"
    )
    return Finding(
        "rapids.build",
        ERROR,
        f"recipe entry {e.text!r} asks for a build for {what}: it contradicts {against}",
        (e.text, *((other.text,) if other else ())),
        sources,
    )
