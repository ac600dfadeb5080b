"""Conda versions, version specs and package specs in pure Python (no solver needed).

Ordering follows conda's VersionOrder: an optional epoch ``N!``, then parts split on ``.``,
``_`` and ``-``, each part a run of numbers and strings (case-insensitive); a part that starts
with a letter gets a leading 0; strings sort before numbers, ``dev`` before every other
string, ``post`` after every number; missing parts and numbers count as 0; a local ``+x``
part breaks ties. Specs: ``X`` and ``==X`` (equal), ``X.*`` / ``=X`` (starts with), ``>=``,
``>``, ``<=``, ``<``, ``!=`` (with ``.*``: does not start with), ``~=``; as py-rattler reads
them, ``==X.*``, ``>=X.*``, ``<X.*`` and ``<=X.*`` drop the ``.*`` and ``>X.*`` is ``>=X``;
``,`` (and) binding tighter than ``|`` (or), parentheses, ``*`` (any). Input this module
cannot read the way py-rattler reads it raises BadInput.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, total_ordering
from itertools import zip_longest
from typing import Tuple, Union

from envcheck.errors import BadInput

_VERSION = re.compile(r"^(?:\d+!)?[a-z0-9_.+-]+$")
_ATOMS = re.compile(r"\d+|[^\d]+")
_DEV, _STR, _NUM, _POST = 0, 1, 2, 3
_ZERO = (_NUM, 0)
Atom = Tuple[int, Union[int, str]]
Part = Tuple[Atom, ...]


def _part(text: str) -> Part:
    atoms: list[Atom] = []
    for a in _ATOMS.findall(text):
        if a.isdigit():
            atoms.append((_NUM, int(a)))
        elif a == "dev":
            atoms.append((_DEV, ""))
        elif a == "post":
            atoms.append((_POST, 0))
        else:
            atoms.append((_STR, a))
    if atoms[0][0] != _NUM:
        atoms.insert(0, _ZERO)
    return tuple(atoms)


def _parts(text: str, what: str) -> tuple[Part, ...]:
    tail = text.endswith("_")
    body = text[:-1] if tail else text
    pieces = re.split(r"[._-]", body)
    if not body or any(p == "" for p in pieces):
        raise BadInput(f"{what!r}: not a conda version (empty part)")
    parts = [_part(p) for p in pieces]
    if tail:
        parts[-1] = (*parts[-1], (_STR, "_"))
    return tuple(parts)


def _cmp_parts(a: tuple[Part, ...], b: tuple[Part, ...]) -> int:
    for pa, pb in zip_longest(a, b, fillvalue=()):
        for x, y in zip_longest(pa, pb, fillvalue=_ZERO):
            if x != y:
                return -1 if x < y else 1
    return 0


def _part_starts(mine: Part, prefix: Part) -> bool:
    """py-rattler's rule: equal atoms, then the prefix's extra atoms all 0."""
    for x, y in zip_longest(mine, prefix):
        if y is None:
            return True
        if x != y and not (x is None and y == _ZERO):
            return False
    return True


@total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    text: str
    epoch: int
    parts: tuple[Part, ...]
    local: tuple[Part, ...]

    def _cmp(self, other: Version) -> int:
        if self.epoch != other.epoch:
            return -1 if self.epoch < other.epoch else 1
        return _cmp_parts(self.parts, other.parts) or _cmp_parts(self.local, other.local)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._cmp(other) == 0

    def __lt__(self, other: Version) -> bool:
        return self._cmp(other) < 0

    def __hash__(self) -> int:
        return hash(self.epoch)

    def startswith(self, prefix: Version) -> bool:
        """Whether this version is ``prefix.*``: part by part, atom by atom equal while both
        have them; the prefix's parts and atoms beyond this version's all 0."""
        if self.epoch != prefix.epoch or prefix.local:
            return False
        for mine, theirs in zip_longest(self.parts, prefix.parts):
            if theirs is None:
                return True
            if not _part_starts(mine or (), theirs):
                return False
        return True

    def __str__(self) -> str:
        return self.text


@cache
def parse_version(text: str) -> Version:
    """A conda version; BadInput (one line) if it is none."""
    v = text.lower()
    if not _VERSION.match(v) or v.count("+") > 1:
        raise BadInput(f"{text!r}: not a conda version")
    epoch = 0
    if "!" in v:
        e, v = v.split("!", 1)
        epoch = int(e)
    main, _, local = v.partition("+")
    if not main or main[0] in "._-" or main.endswith((".", "-")):
        raise BadInput(f"{text!r}: not a conda version")
    return Version(text, epoch, _parts(main, text), _parts(local, text) if local else ())


@dataclass(frozen=True)
class VersionSpec:
    """A conda version spec: ``any`` of ``all`` of (operator, version) constraints."""

    text: str
    any: tuple[tuple[tuple[str, Version | None], ...], ...]

    def matches(self, v: Version | str) -> bool:
        ver = parse_version(v) if isinstance(v, str) else v
        return any(all(_holds(op, ver, w) for op, w in group) for group in self.any)


def _holds(op: str, v: Version, w: Version | None) -> bool:
    if w is None:
        return True
    if op == "==":
        return v == w
    if op == "!=":
        return v != w
    if op == ">=":
        return v >= w
    if op == ">":
        return v > w
    if op == "<=":
        return v <= w
    if op == "<":
        return v < w
    if op == "=*":
        return v.startswith(w)
    if op == "!=*":
        return not v.startswith(w)
    raise AssertionError(op)  # pragma: no cover - _constraint makes only the above


_OPS = ("==", "!=", ">=", "<=", "~=", ">", "<", "=")


def _constraint(text: str, whole: str) -> list[tuple[str, Version | None]]:
    t = text.strip()
    if t in ("*", ""):
        if not t:
            raise BadInput(f"{whole!r}: empty version constraint")
        return [("*", None)]
    if any(c.isspace() for c in t):
        raise BadInput(f"{whole!r}: a space inside a version constraint")
    op = next((o for o in _OPS if t.startswith(o)), "")
    rest = t[len(op):].strip()
    star = rest.endswith("*")
    if star:
        rest = rest[:-2] if rest.endswith(".*") else rest[:-1]
    if not rest or "*" in rest:
        raise BadInput(f"{whole!r}: not a conda version spec")
    v = parse_version(rest)
    if op == "~=":
        if star or len(v.parts) < 2 or v.local:
            raise BadInput(f"{whole!r}: ~= needs a plain X.Y version")
        stem = ".".join(re.split(r"[._-]", rest.split("!")[-1])[:-1])
        prefix = parse_version(f"{v.epoch}!{stem}" if v.epoch else stem)
        return [(">=", v), ("=*", prefix)]
    if star and v.local:
        raise BadInput(f"{whole!r}: .* after a local version part")
    if star:
        if op in ("", "="):
            return [("=*", v)]
        if op == "!=":
            return [("!=*", v)]
        if op == ">":
            return [(">=", v)]  # py-rattler reads >X.* as >=X
        return [(op, v)]  # py-rattler drops the .* of ==, >=, <, <=
    if op == "=":
        return [("=*", v)]
    return [(op or "==", v)]


def _split_top(text: str, sep: str, whole: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            raise BadInput(f"{whole!r}: unbalanced parentheses")
        if c == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if depth:
        raise BadInput(f"{whole!r}: unbalanced parentheses")
    return [*out, text[start:]]


def _or(text: str, whole: str) -> list[list[tuple[str, Version | None]]]:
    groups: list[list[tuple[str, Version | None]]] = []
    for alt in _split_top(text, "|", whole):
        products: list[list[tuple[str, Version | None]]] = [[]]
        for term in _split_top(alt, ",", whole):
            t = term.strip()
            if t.startswith("(") and t.endswith(")"):
                inner = _or(t[1:-1], whole)
                products = [p + q for p in products for q in inner]
            else:
                cons = _constraint(t, whole)
                products = [p + cons for p in products]
        groups += products
    return groups


@cache
def version_spec(text: str) -> VersionSpec:
    """A conda version spec; BadInput (one line) if this module cannot read it."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"{text!r}: empty version spec")
    groups = _or(text, text)
    return VersionSpec(text, tuple(tuple(g) for g in groups))


_NAME = re.compile(r"^(?:[A-Za-z0-9_.\-]+::)?[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_BUILD = re.compile(r"^[A-Za-z0-9_.*\-]+$")


@dataclass(frozen=True)
class PackageSpec:
    name: str  # lower-case, channel dropped
    version: str | None  # the version spec as conda reads it; None = any
    build: str | None  # the build-string glob; None = any


_BRACKET = re.compile(r"""(\w+)\s*=\s*('[^']*'|"[^"]*"|[^,'"]*)\s*(?:,|$)""")


def _brackets(spec: str, inner: str) -> dict[str, str]:
    """``version='...',build=...`` -> {key: value}; only version and build are read."""
    pairs = {k: v.strip("'\"").strip() for k, v in _BRACKET.findall(inner)}
    again = ",".join(f"{k}={v}" for k, v in _BRACKET.findall(inner))
    if not pairs or re.sub(r"\s", "", again) != re.sub(r"\s", "", inner) or set(pairs) - {
        "version", "build"
    }:
        raise BadInput(f"{spec!r}: not a conda package spec (brackets read: version=, build=)")
    version = pairs.get("version", "*")
    if version and not any(c in version for c in "=<>!~*,|"):
        raise BadInput(f"{spec!r}: not a conda package spec (version= needs an operator)")
    return pairs


@cache
def package_spec(spec: str) -> PackageSpec:
    """A conda package spec: ``name``, ``name VERSION [BUILD]``, ``name=VERSION[=BUILD]``
    (``=V`` is ``V.*``; with a build, exactly V) or ``name<op>VERSION``, with an optional
    ``channel::`` and ``[version='...',build=...]``; BadInput (one line) if it is none."""
    s = spec.strip()
    extra: dict[str, str] = {}
    if s.endswith("]") and s.count("[") == 1:
        s, inner = s[:-1].split("[")
        extra = _brackets(spec, inner)
    if not s or any(c in s for c in "[]'\"()"):
        raise BadInput(f"{spec!r}: not a conda package spec (name [version [build]])")
    m = re.match(r"^([^\s=<>!~]+)\s*(.*)$", s)
    assert m is not None
    name, rest = m.group(1), m.group(2).strip()
    if not _NAME.match(name):
        raise BadInput(f"{spec!r}: not a conda package spec ({name!r}: not a name)")
    version, build = _version_build(spec, rest)
    if extra and (version or build):
        raise BadInput(f"{spec!r}: not a conda package spec (a version both outside and in [])")
    version, build = extra.get("version", version), extra.get("build", build)
    if version and version != "*":
        try:
            version_spec(version)
        except BadInput as e:
            raise BadInput(f"{spec!r}: not a conda package spec ({e})") from None
    if build and not _BUILD.match(build):
        raise BadInput(f"{spec!r}: not a conda package spec ({build!r}: not a build)")
    return PackageSpec(name.split("::")[-1].lower(), version if version not in ("", "*") else None,
                       build if build not in ("", "*") else None)


def _version_build(spec: str, rest: str) -> tuple[str, str]:
    """What follows the name -> (version spec, build glob), "" where absent."""
    if not rest:
        return "", ""
    if rest.startswith("=") and not rest.startswith("=="):
        bits = rest[1:].split("=")
        if len(bits) > 2 or not bits[0] or any(c in bits[0] for c in "<>!~ "):
            raise BadInput(f"{spec!r}: not a conda package spec (name=version=build)")
        version, build = bits[0], (bits[1] if len(bits) > 1 else "")
        if version == "*":
            return version, build
        if build:  # name=V=B: exactly V
            if any(c in version for c in ",|"):
                raise BadInput(f"{spec!r}: not a conda package spec (name=version=build)")
            return (version if version.endswith("*") else f"=={version}"), build
        return f"={version}", build  # =V is V.*, in each alternative as py-rattler reads it
    words = rest.split()
    if len(words) > 2:
        raise BadInput(f"{spec!r}: not a conda package spec (name [version [build]])")
    version, build = (words + ["", ""])[:2]
    if version and not any(c in version for c in "=<>!~*,|"):
        version = f"=={version}"
    return version, build


def check_package_spec(spec: str) -> None:
    """BadInput (one line) unless ``spec`` is a conda package spec (see package_spec)."""
    package_spec(spec)
