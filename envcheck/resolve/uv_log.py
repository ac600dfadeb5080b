"""What uv's verbose log (``uv pip compile -v``) says of a resolution: each version's
requirements as uv read them, and which package each tried version clashed on. The held-back
check reads the chain of a clash from it instead of resolving a second time."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.markers import InvalidMarker, Marker
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

_DEP = re.compile(r"^DEBUG Adding transitive dependency for ([^=\s]+)==(\S+): "
                  r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?(\{[^}]*\})?(.*)$")
_SELECT = re.compile(r"^DEBUG Selecting: ([^=\s\[]+)(?:\[[^\]]*\])?==(\S+)")
_CONFLICT = re.compile(r"^DEBUG Recording unit propagation conflict of ([^\s{\[]+)"
                       r"(?:\[[^\]]*\])?(?:\{[^}]*\})? from "
                       r"incompatibility of \(([^,]+), ([^)]+)\)")
_TOUCHED = re.compile(r"^DEBUG (?:Searching for a compatible version of|Adding direct "
                      r"dependency:|Adding transitive dependency for \S+:) "
                      r"([A-Za-z0-9][A-Za-z0-9._-]*)")


# a log names the same hundred projects thousands of times
_canonical = functools.lru_cache(maxsize=4096)(canonicalize_name)


def touched(line: str) -> str | None:
    """The project a log line shows uv about to read, as it resolves (for prefetching)."""
    m = _TOUCHED.match(line)
    return _canonical(m.group(1)) if m else None


@dataclass(frozen=True)
class Requirement:
    """One requirement of one version, as uv's log writes it."""

    name: str  # canonical, extras dropped
    extras: str  # "[cublas]" or ""
    spec: str  # uv's ranges: ">=12.9, <13", "*", ">=13.2.2, <13.2.2+"
    marker: str  # "" or the PEP 508 marker uv kept

    def text(self) -> str:
        return f"{self.name}{self.extras}{shown(self.spec)}"

    def allows(self, version: Version) -> bool | None:
        """Whether ``version`` meets it; None when uv's range cannot be read."""
        sets = ranges(self.spec)
        return None if sets is None else any(s.contains(version, prereleases=True) for s in sets)

    def applies(self, env: Mapping[str, str]) -> bool:
        if not self.marker:
            return True
        try:
            return Marker(self.marker).evaluate(dict(env))
        except (InvalidMarker, ValueError, KeyError):
            return True


@functools.lru_cache(maxsize=4096)  # the clash check asks each range of every version
def ranges(spec: str) -> tuple[SpecifierSet, ...] | None:
    """uv's range text as PEP 440 sets (one per ``|`` alternative); ``X+`` is X's local
    versions, so ``<X+`` reads as ``<=X`` and ``>=X+`` as ``>X``."""
    out = []
    for alt in spec.split("|"):
        alt = alt.strip()
        if alt in ("", "*"):
            out.append(SpecifierSet())
            continue
        alt = re.sub(r"<(\d[^,\s]*)\+", r"<=\1", alt.replace(" ", ""))
        alt = re.sub(r">=(\d[^,\s]*)\+", r">\1", alt)
        try:
            out.append(SpecifierSet(alt))
        except InvalidSpecifier:
            return None
    return tuple(out)


def shown(spec: str) -> str:
    """uv's range as a reader writes it: ``>=13.2.2, <13.2.2+`` -> ``==13.2.2``,
    ``>=12.dev0, <13.dev0`` (what ``==12.*`` reads as) -> ``>=12,<13``."""
    m = re.fullmatch(r">=(\S+), <(\S+)\+", spec.strip())
    if m and m.group(1) == m.group(2):
        return f"=={m.group(1)}"
    text = re.sub(r"(\d)\.dev0\b", r"\1", spec.strip().replace(", ", ","))
    return "" if text == "*" else text


@dataclass(frozen=True)
class ResolverLog:
    requires: Mapping[tuple[str, str], tuple[Requirement, ...]]  # (name, version) -> its reqs
    clashed_on: Mapping[tuple[str, str], tuple[str, ...]]  # (name, version) tried -> packages

    @classmethod
    def read(cls, lines: Iterable[str]) -> ResolverLog:
        requires: dict[tuple[str, str], dict[Requirement, None]] = {}
        clashed: dict[tuple[str, str], dict[str, None]] = {}
        selected: dict[str, str] = {}
        for line in lines:
            if m := _DEP.match(line):
                key = (_canonical(m.group(1)), m.group(2))
                req = Requirement(_canonical(m.group(3)), m.group(4) or "",
                                  m.group(6).strip() or "*", (m.group(5) or "")[1:-1])
                requires.setdefault(key, {})[req] = None
            elif m := _SELECT.match(line):
                selected[_canonical(m.group(1))] = m.group(2)
            elif m := _CONFLICT.match(line):
                a, b = _canonical(m.group(2)), _canonical(m.group(3))
                on = _canonical(m.group(1))
                for pkg in (a, b):
                    if pkg != on and pkg in selected:
                        clashed.setdefault((pkg, selected[pkg]), {})[on] = None
        return cls({k: tuple(v) for k, v in requires.items()},
                   {k: tuple(v) for k, v in clashed.items()})

    def requirements_on(self, name: str, version: str, on: str,
                        env: Mapping[str, str]) -> list[Requirement]:
        return [r for r in self.requires.get((name, version), ())
                if r.name == on and r.applies(env)]


def clashes(need: Sequence[Requirement], other: Sequence[Requirement],
            versions: Iterable[Version]) -> bool | None:
    """Whether no version the index has meets both sets; None when a range cannot be read."""
    both = [*need, *other]
    found = False
    for v in versions:
        got = [r.allows(v) for r in both]
        if None in got:
            return None
        if all(got):
            found = True
            break
    return not found

