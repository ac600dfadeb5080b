"""Version-spec arithmetic the lint rules use (conda syntax, read by conda_version)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from envcheck.errors import BadInput
from envcheck.resolve.record.conda_version import parse_version, version_spec

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
        except BadInput:  # a bound that is no version is no probe
            continue
        if sa.matches(v) and sb.matches(v):
            return True
    return False


def matches(spec: str, version: str) -> bool:
    return bool(version_spec(spec).matches(parse_version(version)))


def admits_pin(spec: str, pin: str) -> bool:
    """Whether a recipe's spec admits the release's pin ('==2022.7.1' or a range)."""
    if pin.startswith("==") and "," not in pin:
        return matches(spec, pin[2:])
    return overlaps(spec, pin)


def minors(spec: str, versions: Sequence[str]) -> list[str]:
    """Which of the X.Y versions a Python / CUDA spec admits."""
    return [v for v in versions if any(matches(spec, p) for p in (v, f"{v}.0", f"{v}.99"))]


def readable(spec: str) -> bool:
    """Whether ``spec`` reads as a conda version spec."""
    try:
        version_spec(spec)
    except BadInput:
        return False
    return True
