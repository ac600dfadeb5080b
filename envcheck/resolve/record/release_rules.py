"""The rules one RAPIDS release (or patch release) sets a recipe's entries: pins, ranges,
Python, CUDA, build strings and glibc."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from envcheck.resolve.record.entries import (
    ADVICE_RANGES,
    CUDA_WHEEL,
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
    release: Release, anchor: str, entries: Sequence[Entry], system: Mapping[str, str]
) -> list[Finding]:
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

    for name in EXACT:
        fact, e = release.get(name), by_name.get(name)
        if e and e.version and fact.known and not admits_pin(e.version, str(fact.value)):
            clash("rapids.pin", ERROR, e, fact, f"the release pins {name} {fact.value}")
    xgb, e = release.get("xgboost"), by_name.get("xgboost")
    if e and e.version and xgb.known:
        want = str(xgb.value).split(" ")[0]
        if not matches(e.version, want):
            clash("rapids.pin", ERROR, e, xgb, f"rapids-xgboost {rel} pins xgboost {xgb.value}")
    required = set()  # names a package the recipe installs requires: advice on them is moot
    for owner, name, fact in run_pins(release):
        if not installs(owner, by_name):
            continue  # the recipe does not install the package that requires it
        for e in entries:
            if (
                e.name == name
                and e.version
                and fact.known
                and not overlaps(e.version, str(fact.value))
            ):
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
    for names, sev in ((META_RANGES, ERROR), (ADVICE_RANGES, WARN)):
        for name in names:
            fact = release.get(name)
            if name in required:  # a run requirement already said it, with its owner
                continue
            for e in (e for e in entries if e.name == name):
                if e.version and fact.known and not overlaps(e.version, str(fact.value)):
                    where = "requires" if sev == ERROR else "was built and tested with"
                    clash("rapids.range", sev, e, fact, f"the release {where} {name} {fact.value}")
    py = release.get("python")
    for e in (e for e in entries if e.name == "python"):
        if e.version and py.known and not minors(e.version, py.value):
            clash("rapids.python", ERROR, e, py, f"it was built for Python {', '.join(py.value)}")
    out += _cuda_rules(release, anchor, by_name, system, clash)
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


def _cuda_rules(release, anchor, by_name, system, clash) -> list[Finding]:  # type: ignore[no-untyped-def]
    out: list[Finding] = []
    majors, builds = release.get("cuda_majors"), release.get("cuda_builds")
    if not majors.known:
        return out
    wheels = release.get("cuda_majors_pip")
    for e in by_name.values():
        if (
            e.name == CUDA_WHEEL
            and e.version
            and wheels.known
            and not minors(e.version, [f"{m}.0" for m in wheels.value])
        ):
            have = ", ".join(wheels.value) or "no"
            clash("rapids.cuda", ERROR, e, wheels,
                      f"pypi.org has its wheels for CUDA {have}.x only (the conda packages: "
                      f"CUDA {', '.join(majors.value)}.x)")
    for name in TOOLKITS:
        e = by_name.get(name)
        if not (e and e.version):
            continue
        got = [m for m in majors.value if minors(e.version, [f"{m}.{n}" for n in range(10)])]
        if not got:
            clash("rapids.cuda", ERROR, e, majors, f"it ships CUDA {', '.join(majors.value)}.x")
            continue
        low = release.get("cuda_min")
        if low.known and not overlaps(e.version, f">={low.value}"):
            clash("rapids.cuda", ERROR, e, low, f"it requires CUDA {low.value}+ ({low.note})")
            continue
        same_major = [b for b in builds.value if b.split(".")[0] in got]
        older = [
            b for b in same_major if not minors(e.version, [b]) and overlaps(e.version, f"<{b}")
        ]
        if older and len(older) == len(same_major):
            rule = release.get("cuda_rule")
            out.append(
                Finding(
                    "rapids.cuda-build",
                    WARN,
                    f"{e.text!r}: RAPIDS {release.version}'s rule is {rule.value} "
                    f"({rule.cite()}), which this meets, but the release was built with CUDA "
                    f"{', '.join(same_major)} ({builds.cite()}) and pins cuda-python "
                    f"{_cuda_python(release)}: an older toolkit is not what it was built for",
                    (anchor, e.text),
                    (*rule.sources, *builds.sources),
                )
            )
    drv = system.get("cuda")
    if drv and not any(matches(f">={m}", drv) for m in majors.value):
        out.append(
            Finding(
                "rapids.cuda",
                ERROR,
                f"RAPIDS {release.version} ships CUDA {', '.join(majors.value)}.x; the recipe's "
                f"target driver supports CUDA {drv}",
                (anchor,),
                majors.sources,
            )
        )
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


def _cuda_python(release: Release) -> str:
    v = release.get("cuda-python")
    if not v.known:
        return "(unknown)"
    val = v.value if isinstance(v.value, str) else v.value.get("11", "")
    return f"{val} ({v.cite()})"
