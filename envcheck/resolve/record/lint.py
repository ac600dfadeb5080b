"""Check a recipe's pins against the RAPIDS release record, before any solve (pure functions).

Rules (ids as printed):
  rapids.one-release   two RAPIDS releases in one environment (dask-cuda=22.08 + dask-cudf=22.10)
  rapids.pin           a pin the release fixes exactly (dask, distributed, dask-expr, xgboost)
  rapids.range         a range from the release's `rapids` meta-package (numpy, cupy, ucx, ...),
                       or a run requirement ("run:OWNER:NAME") of a package the recipe installs
  rapids.python        a Python the release was not built for
  rapids.cuda          a CUDA major the release does not ship, a toolkit below its oldest CUDA
                       (cuda_min), or below a floor from a release on (CUDA 12.2 from 25.12)
  rapids.glibc         a target glibc older than the release needs (RAPIDS 24.06+ on glibc 2.17)
A release with patch releases that differ (23.04.00 / 23.04.01) is checked as each patch the
recipe's rapids / rapids-xgboost entries admit; findings common to them all stand.
Warnings (the build goes on): a range from versions.yaml that is not a run requirement of the
meta-package (pandas, pytorch), ucx-py, a toolkit older than the release was built with, a
release the record does not cover; info: entries the record says nothing about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from envcheck.resolve.record.table import Record, Release, Value, release_key

ERROR, WARN, INFO = "error", "warn", "info"
# ranges of the `rapids` meta-package's run requirements: a recipe outside them cannot install it
META_RANGES = ("numpy", "cupy", "numba", "nccl", "ucx")
# ranges versions.yaml holds for RAPIDS' other environments (notebooks, builds): advice only
ADVICE_RANGES = ("pandas", "pytorch", "ucx-py", "distributed-ucxx")
EXACT = ("dask", "distributed", "dask-expr")
TOOLKITS = ("cudatoolkit", "cuda-version")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
# stands for every release after those the record covers and the recipe names
LATER = "99.12"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # error / warn / info
    message: str
    entries: tuple[str, ...] = ()  # the recipe entries it is about
    sources: tuple[str, ...] = ()  # record pointers: path:line

    def line(self) -> str:
        src = f" [{', '.join(self.sources)}]" if self.sources else ""
        return f"{self.rule}: {self.message}{src}"


@dataclass(frozen=True)
class Entry:
    text: str  # as written in the recipe
    name: str
    version: str | None  # the match spec's version part, as conda reads it; None = any
    build: str | None = None  # the build-string part (a glob), None = any


def parse_entries(specs: Iterable[str]) -> list[Entry]:
    from envcheck.resolve.spec import conda_spec

    out = []
    for s in specs:
        m = conda_spec(s)
        version = None if m.version in (None, "*") else m.version
        build = None if m.build in (None, "*") else m.build
        out.append(Entry(s, m.name.normalized, version, build))
    return out


def _probes(*specs: str) -> list[str]:
    """Versions at and just above every bound named in the specs: if two ranges meet, one of
    these lies in both (a range's lower end is a bound, or just above one)."""
    out: list[str] = []
    for spec in specs:
        for n in _NUMBER.findall(spec):
            out += [n, f"{n}.0.1", f"{n}.1", f"{n}.99"]
    return out


@cache
def overlaps(a: str, b: str) -> bool:
    """Whether some version satisfies both version specs (conda syntax)."""
    sa, sb = _vspec(a), _vspec(b)
    for p in _probes(a, b):
        try:
            v = _version(p)
        except Exception:  # noqa: BLE001 - a bound rattler cannot read is no probe
            continue
        if sa.matches(v) and sb.matches(v):
            return True
    return False


def matches(spec: str, version: str) -> bool:
    return bool(_vspec(spec).matches(_version(version)))


@cache
def _vspec(text: str):  # type: ignore[no-untyped-def]
    from rattler import VersionSpec

    return VersionSpec(text)


@cache
def _version(text: str):  # type: ignore[no-untyped-def]
    from rattler import Version

    return Version(text)


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
    for n in _NUMBER.findall(spec):
        parts = n.split(".")
        if len(parts) >= 2 and int(parts[0]) == yy and int(parts[1]) == mm:
            out += [n, f"{n}.0.1", f"{n}.1"]
    return out


def admitted_releases(entry: Entry, universe: frozenset[str]) -> frozenset[str]:
    """The releases of ``universe`` of which some version satisfies the entry's version."""
    if entry.version is None:
        return universe
    spec = _vspec(entry.version)
    return frozenset(
        r for r in universe if any(spec.matches(_version(v)) for v in _probes_in(r, entry.version))
    )


def describe(releases: Iterable[str]) -> str:
    """'22.08' / '23.08, 23.10 and later releases'."""
    rels = sorted(releases, key=release_key)
    later = LATER in rels
    named = [r for r in rels if r != LATER]
    text = ", ".join(named[:6]) + (f" ... {named[-1]}" if len(named) > 6 else "")
    if later:
        text = f"{text} and later releases" if named else "releases after the record's newest"
    return text


def _admits(spec: str, pin: str) -> bool:
    """Whether a recipe's spec admits the release's pin ('==2022.7.1' or a range)."""
    if pin.startswith("==") and "," not in pin:
        return matches(spec, pin[2:])
    return overlaps(spec, pin)


def _minors(spec: str, versions: Sequence[str]) -> list[str]:
    """Which of the X.Y versions a Python / CUDA spec admits."""
    return [v for v in versions if any(matches(spec, p) for p in (v, f"{v}.0", f"{v}.99"))]


def lint(dependencies: Sequence[str], system: Mapping[str, str], record: Record) -> list[Finding]:
    """Every rule, for every spec form: the release is what the RAPIDS entries admit together.

    One release admitted: its rules apply. Several: a finding stands when every admitted
    release gives it (`cudf>=23.08,<24.04` with `pandas>=2`). None: two releases are mixed.
    """
    entries = parse_entries(dependencies)
    names = record.release_versioned_names()
    rapids = [e for e in entries if e.name in names and e.version is not None]
    if not rapids:
        return []
    universe = release_universe(record)
    admits = {e.text: admitted_releases(e, universe) for e in rapids}
    strays = [e for e in rapids if not admits[e.text]]  # 'cudf=0.19': before calendar versions
    rapids = [e for e in rapids if admits[e.text]]
    if strays:
        return [_stray(strays)] + (
            lint_admitted(entries, rapids, admits, system, record) if rapids else []
        )
    return lint_admitted(entries, rapids, admits, system, record)


def _stray(strays: Sequence[Entry]) -> Finding:
    return Finding(
        "rapids.unknown-release",
        WARN,
        f"{', '.join(repr(e.text) for e in strays)} admit no RAPIDS release since 21.06 (YY.MM, "
        "even months): the record has nothing to check them against",
        tuple(e.text for e in strays),
    )


def lint_admitted(
    entries: Sequence[Entry],
    rapids: Sequence[Entry],
    admits: Mapping[str, frozenset[str]],
    system: Mapping[str, str],
    record: Record,
) -> list[Finding]:
    names = record.release_versioned_names()
    common = frozenset.intersection(*admits.values())
    if not common:
        return [_mixed(record, rapids, admits)]
    anchor = min(rapids, key=lambda e: len(admits[e.text])).text
    ordered = sorted(common, key=release_key)  # messages name the oldest admitted release
    per_release = [_one_release(rel, anchor, entries, system, record) for rel in ordered]
    findings = _shared(per_release, f"every release the recipe admits: {describe(common)}")
    told = {"python", *EXACT, "xgboost", *META_RANGES, *ADVICE_RANGES, *TOOLKITS, *names}
    told |= {name for r in record.releases.values() for _, name, _ in _run_pins(r)}
    silent = sorted({e.name for e in entries} - told)
    if silent:
        findings.append(
            Finding(
                "rapids.not-in-record",
                INFO,
                f"the record has no rule for {', '.join(silent)}: the solve decides whether "
                f"they take RAPIDS {describe(common)}'s pins",
                tuple(e.text for e in entries if e.name in silent),
            )
        )
    return findings


def _one_release(
    rel: str, anchor: str, entries: Sequence[Entry], system: Mapping[str, str], record: Record
) -> list[Finding]:
    release = record.release(rel)
    floor = _cuda_floor(rel, anchor, entries, system, record)
    if release is None:
        return floor + _uncovered(rel, anchor, system, record)
    patches = _patches(release, entries)
    if not patches:
        return floor + _release_rules(release, anchor, entries, system)
    per_patch = [_release_rules(release.at(p), anchor, entries, system) for p in patches]
    also = f"every patch release the recipe admits: {', '.join(patches)}"
    return floor + _shared(per_patch, also)


# the packages whose version is the patch release the integration files describe
PATCH_NAMED = ("rapids", "rapids-xgboost")


def _patches(release: Release, entries: Sequence[Entry]) -> list[str]:
    """The patch releases (of those whose facts differ) the recipe's rapids / rapids-xgboost
    entries admit: all of them when it names none, or none of those recorded."""
    named = [e for e in entries if e.name in PATCH_NAMED and e.version]
    every = sorted(release.patches)
    return [p for p in every if all(matches(e.version, p) for e in named)] or every


def _cuda_floor(
    rel: str, anchor: str, entries: Sequence[Entry], system: Mapping[str, str], record: Record
) -> list[Finding]:
    """The CUDA minimum a notice sets from a release on (12.2 from 25.12): toolkit entries of
    that CUDA major below it, and target drivers of that major below it, are errors."""
    floor = record.floors.get("cuda")
    if floor is None or not floor.known or release_key(rel) < release_key(floor.value["since"]):
        return []
    need = floor.value["cuda"]
    major = need.split(".")[0]
    why = f"RAPIDS {floor.value['since']} and later require CUDA >= {need} ({floor.value['by']})"
    out = []
    for e in entries:
        # entries of an older major alone are the CUDA-major rule's to report
        if not (e.name in TOOLKITS and e.version and overlaps(e.version, f">={major}")):
            continue
        if not overlaps(e.version, f">={need}"):
            out.append(
                Finding(
                    "rapids.cuda",
                    ERROR,
                    f"recipe entry {e.text!r} contradicts RAPIDS {rel} ({anchor!r}): {why}",
                    (anchor, e.text),
                    floor.sources,
                )
            )
    drv = system.get("cuda")
    if drv and drv.split(".")[0] == major and matches(f"<{need}", drv):
        out.append(
            Finding(
                "rapids.cuda",
                ERROR,
                f"RAPIDS {rel} ({anchor!r}): {why}; the recipe's target driver supports CUDA {drv}",
                (anchor,),
                floor.sources,
            )
        )
    return out


def _shared(per_release: Sequence[list[Finding]], also: str) -> list[Finding]:
    """The findings every release gives (by rule, severity and entries), merged into one;
    ``also`` names the releases in the merged message."""
    if len(per_release) == 1:
        return list(per_release[0])
    key = lambda f: (f.rule, f.severity, f.entries)  # noqa: E731
    common = set.intersection(*({key(f) for f in fs} for fs in per_release))
    out = []
    for f in per_release[0]:
        if key(f) in common:
            sources = dict.fromkeys(
                s for fs in per_release for g in fs if key(g) == key(f) for s in g.sources
            )
            out.append(
                Finding(
                    f.rule,
                    f.severity,
                    f"{f.message} (and so does {also})",
                    f.entries,
                    tuple(sources),
                )
            )
            common.discard(key(f))
    return out


def _mixed(
    record: Record, rapids: Sequence[Entry], admits: Mapping[str, frozenset[str]]
) -> Finding:
    parts = [f"{e.text!r} ({describe(admits[e.text]) or 'no release'})" for e in rapids]
    pinned = {e.text: next(iter(admits[e.text])) for e in rapids if len(admits[e.text]) == 1}
    by_release: dict[str, list[Entry]] = {}
    for e in rapids:
        if e.text in pinned:
            by_release.setdefault(pinned[e.text], []).append(e)
    return Finding(
        "rapids.one-release",
        ERROR,
        "two RAPIDS releases in one environment: no release satisfies "
        + " and ".join(parts)
        + "; every RAPIDS package of an environment comes from one release (the "
        "`rapids` meta-package pins each to its own version)",
        tuple(e.text for e in rapids),
        tuple(_member_sources(record, by_release)),
    )


def _member_sources(record: Record, by_release: Mapping[str, list[Entry]]) -> list[str]:
    out = []
    for rel in by_release:
        r = record.release(rel)
        if r is not None:
            out += list(r.get("members").sources[:1])
    return out


def _uncovered(rel: str, anchor: str, system: Mapping[str, str], record: Record) -> list[Finding]:
    glibc = system.get("glibc")
    after, first = record.after.get("glibc"), record.after.get("first_release")
    newer = first is not None and release_key(rel) >= release_key(first.value)
    if newer and glibc and after and after.known and matches(f"<{after.value}", glibc):
        return [
            Finding(
                "rapids.glibc",
                ERROR,
                f"RAPIDS {rel} ({anchor!r}) needs glibc >= {after.value}; the recipe targets "
                f"glibc {glibc} (RHEL/CentOS 7): {_newest_for(record, glibc)} is the newest "
                "release the record has for it",
                (anchor,),
                after.sources,
            )
        ]
    covered = ", ".join(sorted(record.releases, key=release_key))
    return [
        Finding(
            "rapids.unknown-release",
            WARN,
            f"RAPIDS {rel} ({anchor!r}) is not in the release record (it covers {covered}): "
            "its pins are unknown here, nothing was checked",
            (anchor,),
        )
    ]


def _newest_for(record: Record, glibc: str) -> str:
    fits = [
        v
        for v, r in record.releases.items()
        if r.get("glibc").known and not matches(f"<{r.get('glibc').value}", glibc)
    ]
    return max(fits, key=release_key) if fits else "no release"


def _release_rules(
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
        if e and e.version and fact.known and not _admits(e.version, str(fact.value)):
            clash("rapids.pin", ERROR, e, fact, f"the release pins {name} {fact.value}")
    xgb, e = release.get("xgboost"), by_name.get("xgboost")
    if e and e.version and xgb.known:
        want = str(xgb.value).split(" ")[0]
        if not matches(e.version, want):
            clash("rapids.pin", ERROR, e, xgb, f"rapids-xgboost {rel} pins xgboost {xgb.value}")
    required = set()  # names a package the recipe installs requires: advice on them is moot
    for owner, name, fact in _run_pins(release):
        e = by_name.get(name)
        if owner not in by_name and "rapids" not in by_name:
            continue  # the recipe does not install the package that requires it
        if e and e.version and fact.known and not overlaps(e.version, str(fact.value)):
            what = f"{owner} {rel} requires {name} {fact.value} ({fact.note})"
            clash("rapids.range", ERROR, e, fact, what)
            required.add(name)
    for names, sev in ((META_RANGES, ERROR), (ADVICE_RANGES, WARN)):
        for name in names:
            fact, e = release.get(name), by_name.get(name)
            if sev == WARN and name in required:
                continue
            if e and e.version and fact.known and not overlaps(e.version, str(fact.value)):
                where = "requires" if sev == ERROR else "was built and tested with"
                clash("rapids.range", sev, e, fact, f"the release {where} {name} {fact.value}")
    py, e = release.get("python"), by_name.get("python")
    if e and e.version and py.known and not _minors(e.version, py.value):
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


def _run_pins(release: Release) -> list[tuple[str, str, Value]]:
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
    for name in TOOLKITS:
        e = by_name.get(name)
        if not (e and e.version):
            continue
        got = [m for m in majors.value if _minors(e.version, [f"{m}.{n}" for n in range(10)])]
        if not got:
            clash("rapids.cuda", ERROR, e, majors, f"it ships CUDA {', '.join(majors.value)}.x")
            continue
        low = release.get("cuda_min")
        if low.known and not overlaps(e.version, f">={low.value}"):
            clash("rapids.cuda", ERROR, e, low, f"it requires CUDA {low.value}+ ({low.note})")
            continue
        same_major = [b for b in builds.value if b.split(".")[0] in got]
        older = [
            b for b in same_major if not _minors(e.version, [b]) and overlaps(e.version, f"<{b}")
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
            if pe and pe.version and not _minors(pe.version, [want]):
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
                    and not _minors(te.version, [f"{major}.{n}" for n in range(10)])
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


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == ERROR]


_CU_SUFFIX = re.compile(r"^(.+)-cu(\d{2})$")


def pip_entries(requirements: Iterable[str], record: Record) -> list[str]:
    """RAPIDS wheels as the conda entries the rules read: 'cudf-cu12==26.10.*' says cudf
    26.10.* and CUDA 12 (the wheel's suffix is its CUDA major); dask-cuda keeps its name."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = record.release_versioned_names() | {"dask-cuda"}
    out: list[str] = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        m = _CU_SUFFIX.match(name)
        base = m.group(1) if m else name
        if base not in names and name not in EXACT and name != "python":
            continue
        spec = ",".join(
            s.version if s.operator == "==" and s.version.endswith(".*") else str(s)
            for s in req.specifier
        )
        out.append(f"{base} {spec}" if spec else base)
        if m and f"cuda-version {m.group(2)}.*" not in out:
            out.append(f"cuda-version {m.group(2)}.*")
    return out
