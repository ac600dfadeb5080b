"""Check a recipe's pins against the RAPIDS release record, before any solve (pure functions).

Rules (ids as printed):
  rapids.one-release   two RAPIDS releases in one environment (dask-cuda=22.08 + dask-cudf=22.10)
  rapids.pin           a pin the release fixes exactly (dask, distributed, dask-expr, xgboost)
  rapids.range         a range from the release's `rapids` meta-package (numpy, cupy, ucx, ...)
  rapids.python        a Python the release was not built for
  rapids.cuda          a CUDA major the release does not ship
  rapids.glibc         a target glibc older than the release needs (RAPIDS 24.06+ on glibc 2.17)
Warnings (the build goes on): a range from versions.yaml that is not a run requirement of the
meta-package (pandas, pytorch), ucx-py, a toolkit older than the release was built with, a
release the record does not cover; info: entries the record says nothing about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from envcheck.resolve.record.table import Record, Release, Value, release_key

ERROR, WARN, INFO = "error", "warn", "info"
# ranges of the `rapids` meta-package's run requirements: a recipe outside them cannot install it
META_RANGES = ("numpy", "cupy", "numba", "nccl", "ucx")
# ranges versions.yaml holds for RAPIDS' other environments (notebooks, builds): advice only
ADVICE_RANGES = ("pandas", "pytorch", "ucx-py", "distributed-ucxx")
EXACT = ("dask", "distributed", "dask-expr")
TOOLKITS = ("cudatoolkit", "cuda-version")
# rattler prints '=22.08' as '22.8.*'
_PINNED_RELEASE = re.compile(r"^(?:==?)?(\d{2})\.(\d{1,2})(?:\.\*|\.0+)?$")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")


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
    version: str | None  # the match spec's version part; None = any


def parse_entries(specs: Iterable[str]) -> list[Entry]:
    from rattler import MatchSpec

    out = []
    for s in specs:
        m = MatchSpec(s)
        out.append(Entry(s, m.name.normalized, None if m.version in (None, "*") else m.version))
    return out


def _probes(*specs: str) -> list[str]:
    """Versions at and just above every bound named in the specs: if two ranges meet, one of
    these lies in both (a range's lower end is a bound, or just above one)."""
    out: list[str] = []
    for spec in specs:
        for n in _NUMBER.findall(spec):
            out += [n, f"{n}.0.1", f"{n}.1", f"{n}.99"]
    return out


def overlaps(a: str, b: str) -> bool:
    """Whether some version satisfies both version specs (conda syntax)."""
    from rattler import Version, VersionSpec

    sa, sb = VersionSpec(a), VersionSpec(b)
    for p in _probes(a, b):
        try:
            v = Version(p)
        except Exception:  # noqa: BLE001 - a bound rattler cannot read is no probe
            continue
        if sa.matches(v) and sb.matches(v):
            return True
    return False


def matches(spec: str, version: str) -> bool:
    from rattler import Version, VersionSpec

    return VersionSpec(spec).matches(Version(version))


def pinned_release(entry: Entry, names: frozenset[str]) -> str | None:
    """'cudf=22.08' -> '22.08' for packages versioned by the RAPIDS release."""
    if entry.name not in names or entry.version is None:
        return None
    m = _PINNED_RELEASE.match(entry.version.replace(" ", ""))
    return f"{m.group(1)}.{int(m.group(2)):02d}" if m else None


def _admits(spec: str, pin: str) -> bool:
    """Whether a recipe's spec admits the release's pin ('==2022.7.1' or a range)."""
    if pin.startswith("==") and "," not in pin:
        return matches(spec, pin[2:])
    return overlaps(spec, pin)


def _minors(spec: str, versions: Sequence[str]) -> list[str]:
    """Which of the X.Y versions a Python / CUDA spec admits."""
    return [v for v in versions if any(matches(spec, p) for p in (v, f"{v}.0", f"{v}.99"))]


def lint(dependencies: Sequence[str], system: Mapping[str, str], record: Record) -> list[Finding]:
    entries = parse_entries(dependencies)
    names = record.release_versioned_names()
    by_release: dict[str, list[Entry]] = {}
    for e in entries:
        rel = pinned_release(e, names)
        if rel:
            by_release.setdefault(rel, []).append(e)
    findings: list[Finding] = []
    if len(by_release) > 1:
        parts = [
            f"{', '.join(repr(e.text) for e in es)} ({rel})"
            for rel, es in sorted(by_release.items(), key=lambda kv: release_key(kv[0]))
        ]
        findings.append(
            Finding(
                "rapids.one-release",
                ERROR,
                "two RAPIDS releases in one environment: "
                + " vs ".join(parts)
                + "; every RAPIDS package of an environment comes from one release (the "
                "`rapids` meta-package pins each to its own version)",
                tuple(e.text for es in by_release.values() for e in es),
                tuple(_member_sources(record, by_release)),
            )
        )
        return findings
    if not by_release:
        return findings
    ((rel, anchors),) = by_release.items()
    anchor = anchors[0].text
    release = record.release(rel)
    if release is None:
        findings += _uncovered(rel, anchor, system, record)
        return findings
    findings += _release_rules(release, anchor, entries, system)
    told = {"python", *EXACT, "xgboost", *META_RANGES, *ADVICE_RANGES, *TOOLKITS, *names}
    silent = sorted({e.name for e in entries} - told)
    if silent:
        findings.append(
            Finding(
                "rapids.not-in-record",
                INFO,
                f"the record has no rule for {', '.join(silent)}: the solve decides whether "
                f"they take RAPIDS {rel}'s pins",
                tuple(e.text for e in entries if e.name in silent),
            )
        )
    return findings


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
    rel = release.version
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
    for names, sev in ((META_RANGES, ERROR), (ADVICE_RANGES, WARN)):
        for name in names:
            fact, e = release.get(name), by_name.get(name)
            if e and e.version and fact.known and not overlaps(e.version, str(fact.value)):
                where = "requires" if sev == ERROR else "was built and tested with"
                clash("rapids.range", sev, e, fact, f"the release {where} {name} {fact.value}")
    py, e = release.get("python"), by_name.get("python")
    if e and e.version and py.known and not _minors(e.version, py.value):
        clash("rapids.python", ERROR, e, py, f"it was built for Python {', '.join(py.value)}")
    out += _cuda_rules(release, anchor, by_name, system, clash)
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


def _cuda_python(release: Release) -> str:
    v = release.get("cuda-python")
    if not v.known:
        return "(unknown)"
    val = v.value if isinstance(v.value, str) else v.value.get("11", "")
    return f"{val} ({v.cite()})"


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == ERROR]
