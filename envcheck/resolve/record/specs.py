"""Version-spec arithmetic the lint rules use (conda syntax, read by py-rattler)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

NUMBER = re.compile(r"\d+(?:\.\d+)*")


def _probes(*specs: str) -> list[str]:
    """Versions at and just above every bound named in the specs: if two ranges meet, one of
    these lies in both (a range's lower end is a bound, or just above one)."""
    out: list[str] = []
    for spec in specs:
        for n in NUMBER.findall(spec):
            out += [n, f"{n}.0.1", f"{n}.1", f"{n}.99"]
    return out


@cache
def overlaps(a: str, b: str) -> bool:
    """Whether some version satisfies both version specs (conda syntax)."""
    sa, sb = version_spec(a), version_spec(b)
    for p in _probes(a, b):
        try:
            v = parse_version(p)
        except Exception:  # noqa: BLE001 - a bound rattler cannot read is no probe
            continue
        if sa.matches(v) and sb.matches(v):
            return True
    return False


def matches(spec: str, version: str) -> bool:
    return bool(version_spec(spec).matches(parse_version(version)))


@cache
def version_spec(text: str):  # type: ignore[no-untyped-def]
    from rattler import VersionSpec

    return VersionSpec(text)


@cache
def parse_version(text: str):  # type: ignore[no-untyped-def]
    from rattler import Version

    return Version(text)


def admits_pin(spec: str, pin: str) -> bool:
    """Whether a recipe's spec admits the release's pin ('==2022.7.1' or a range)."""
    if pin.startswith("==") and "," not in pin:
        return matches(spec, pin[2:])
    return overlaps(spec, pin)


def minors(spec: str, versions: Sequence[str]) -> list[str]:
    """Which of the X.Y versions a Python / CUDA spec admits."""
    return [v for v in versions if any(matches(spec, p) for p in (v, f"{v}.0", f"{v}.99"))]


def readable(spec: str) -> bool:
    """Whether rattler reads ``spec`` as a version spec."""
    try:
        version_spec(spec)
    except Exception:  # noqa: BLE001 - rattler raises its own types
        return False
    return True
