"""Check a recipe's pins against the RAPIDS release record, before any solve (pure functions).

Rules (ids as printed):
  rapids.one-release   two RAPIDS releases in one environment (dask-cuda=22.08 + dask-cudf=22.10)
  rapids.pin           a pin the release fixes exactly (dask, distributed, dask-expr, xgboost),
                       where a package of the recipe requires it (edges.py: the chain is named)
  rapids.range         a bound a package of the recipe requires, directly or through another
                       (the record's `requires`); where a package's requirements are not in the
                       data, the `rapids` meta-package's ranges (numpy, cupy, ucx, ...) and the
                       run requirements ("run:OWNER:NAME") of the packages the recipe installs
  rapids.python        a Python the release was not built for
  rapids.cuda          a CUDA major the release does not ship, a toolkit below its minimum
                       (25.06: 11.4) or a floor from a release on (CUDA 12.2 from 25.12), a
                       toolkit or release the target driver (system.cuda, conda's __cuda) does
                       not run (a 12.8 driver runs no CUDA 13; cuda.py)
  rapids.glibc         a target glibc older than the release needs (RAPIDS 24.06+ on glibc 2.17)
  rapids.ended         a library asked for in a release after its last (cuspatial after 25.04)
  rapids.ucxx          a UCXX (ucxx, distributed-ucxx) of another series than the release's
  rapids.platform      a conda platform the release built nothing for, with the CUDA majors
                       the recipe takes (23.08's CUDA 12: linux-64 only; platforms.py)
Pip requirements are read beside the conda entries (cudf-cu12==25.8.* is cudf 25.8.* and a
CUDA 12 wheel, checked against the CUDA majors pypi.org has wheels of; PEP 440 ===, ~= and !=
as their conda equals); python_abi is a Python entry.
A release with patch releases that differ (23.04.00 / 23.04.01) is checked as each patch the
recipe's rapids / rapids-xgboost entries admit; findings common to them all stand.
Warnings (the build goes on): a range from versions.yaml that no package of the recipe requires
at install (pandas, pytorch, ucx-py where no run requirement names it), a toolkit older than
the release was built with, a release the record does not cover; info: entries the record
says nothing about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envcheck.resolve.record.entries import (
    ADVICE_RANGES,
    CUDA_WHEEL,
    EXACT,
    META_RANGES,
    TOOLKITS,
    UCXX,
    Entry,
    parse_entries,
    pip_entries,
)
from envcheck.resolve.record.finding import ERROR, INFO, WARN, Finding
from envcheck.resolve.record.platforms import platform_rules
from envcheck.resolve.record.release_rules import release_rules, run_pins
from envcheck.resolve.record.releases import admitted_releases, describe, release_universe
from envcheck.resolve.record.specs import matches, overlaps
from envcheck.resolve.record.table import Record, Release, release_key


def lint(
    dependencies: Sequence[str],
    system: Mapping[str, str],
    record: Record,
    pip: Sequence[str] = (),
    platforms: Sequence[str] = (),
) -> list[Finding]:
    """Every rule, for every spec form: the release is what the RAPIDS entries admit together.
    ``pip`` is the recipe's pip requirements, read beside its conda entries; ``platforms`` the
    conda platforms it is locked for, held to the release's build matrix where a conda entry
    names a RAPIDS package (pip wheels are their own axis).

    One release admitted: its rules apply. Several: a finding stands when every admitted
    release gives it (`cudf>=23.08,<24.04` with `pandas>=2`). None: two releases are mixed.
    """
    conda = parse_entries(dependencies)
    entries = [*conda, *pip_entries(pip, record)]
    names = record.release_versioned_names()
    if not any(e.name in names and e.version is not None for e in conda):
        platforms = ()
    rapids = [e for e in entries if e.name in names and e.version is not None]
    if not rapids:
        return []
    universe = release_universe(record)
    admits = {e.text: admitted_releases(e, universe) for e in rapids}
    strays = [e for e in rapids if not admits[e.text]]  # 'cudf=0.19': before calendar versions
    rapids = [e for e in rapids if admits[e.text]]
    if strays:
        return [_stray(strays)] + (
            lint_admitted(entries, rapids, admits, system, record, platforms) if rapids else []
        )
    return lint_admitted(entries, rapids, admits, system, record, platforms)


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
    platforms: Sequence[str] = (),
) -> list[Finding]:
    names = record.release_versioned_names()
    common = frozenset.intersection(*admits.values())
    if not common:
        return [_mixed(record, rapids, admits)]
    anchor = min(rapids, key=lambda e: len(admits[e.text])).text
    ordered = sorted(common, key=release_key)  # messages name the oldest admitted release
    per_release = [
        _one_release(rel, anchor, entries, system, record, platforms) for rel in ordered
    ]
    findings = _shared(per_release, f"every release the recipe admits: {describe(common)}")
    told = {"python", *EXACT, "xgboost", *META_RANGES, *ADVICE_RANGES, *TOOLKITS, *names}
    told |= {CUDA_WHEEL, *UCXX, *record.libraries}
    told |= {name for r in record.releases.values() for _, name, _ in run_pins(r)}
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
    rel: str,
    anchor: str,
    entries: Sequence[Entry],
    system: Mapping[str, str],
    record: Record,
    platforms: Sequence[str] = (),
) -> list[Finding]:
    release = record.release(rel)
    floor = _cuda_floor(rel, anchor, entries, system, record) + _ended(rel, entries, record)
    if release is None:
        return floor + _uncovered(rel, anchor, system, record)
    floor += platform_rules(release, anchor, entries, system, platforms)
    patches = _patches(release, entries)
    names = record.release_versioned_names()
    if not patches:
        return floor + release_rules(release, anchor, entries, system, record.drivers, names)
    per_patch = [
        release_rules(release.at(p), anchor, entries, system, record.drivers, names)
        for p in patches
    ]
    also = f"every patch release the recipe admits: {', '.join(patches)}"
    return floor + _shared(per_patch, also)


# the packages whose version is the patch release the record describes: the integration
# files' (23.04.00 / 23.04.01), rapids-dask-dependency's wheels' (25.12.0 / 25.12.1)
PATCH_NAMED = ("rapids", "rapids-xgboost", "rapids-dask-dependency")


def _patches(release: Release, entries: Sequence[Entry]) -> list[str]:
    """The patch releases (of those whose facts differ) the recipe's PATCH_NAMED entries
    admit: all of them when it names none (X.Y takes any patch's pins), or none recorded."""
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
    release = record.release(rel)
    if release is not None and release.get(f"cuda:{major}").known:
        return []  # the release's own platform support says it (cuda.py)
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


def _ended(rel: str, entries: Sequence[Entry], record: Record) -> list[Finding]:
    """Libraries asked for in a release after their last one on pypi.org."""
    out = []
    for e in entries:
        lib = record.libraries.get(e.name)
        if lib is None or not lib.known or not lib.value["ended"]:
            continue
        last = lib.value["last"]
        if release_key(rel) > release_key(last):
            out.append(
                Finding(
                    "rapids.ended",
                    ERROR,
                    f"recipe entry {e.text!r}: {e.name} has no RAPIDS {rel}: its last release "
                    f"is {last} ({lib.note})",
                    (e.text,),
                    lib.sources,
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
