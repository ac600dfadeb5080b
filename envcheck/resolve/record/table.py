"""The shipped RAPIDS release record (rapids.json), read once, as typed values with sources."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("rapids.json")
UNKNOWN = "unknown"
_CALVER = re.compile(r"^(\d{2})\.(\d{2})$")


@dataclass(frozen=True)
class Value:
    """One fact of the record: its value ("unknown" when the data does not say) and where from."""

    value: Any
    sources: tuple[str, ...]
    note: str = ""

    @property
    def known(self) -> bool:
        return self.value != UNKNOWN

    def cite(self) -> str:
        """'path:line, path:line' (or the note, for an unknown value)."""
        if not self.sources:
            return self.note or "no source"
        return ", ".join(self.sources)


@dataclass(frozen=True)
class Release:
    version: str  # "22.08"
    facts: dict[str, Value]
    # patch releases whose facts differ ("23.04.00" -> the facts it has in place of facts')
    patches: dict[str, dict[str, Value]] = field(default_factory=dict)
    patch: str = ""  # set on the release as one patch has it (at())

    def get(self, field: str) -> Value:
        return self.facts.get(field) or Value(UNKNOWN, (), f"the record has no {field} field")

    @property
    def label(self) -> str:
        """'23.04' or, for one patch release, '23.04.00'."""
        return self.patch or self.version

    def at(self, patch: str) -> Release:
        """The release as patch release ``patch`` has it."""
        return Release(self.version, {**self.facts, **self.patches[patch]}, {}, patch)


@dataclass(frozen=True)
class Record:
    releases: dict[str, Release]
    after: dict[str, Value]  # what is known about releases newer than the newest covered
    sources: dict[str, str]  # copied file -> "repo@commit (branch) path"
    floors: dict[str, Value] = field(default_factory=dict)  # from a release on: {"since", ...}
    # library -> {"releases": [...], "last": "25.04", "ended": bool}, from pypi.org's files
    libraries: dict[str, Value] = field(default_factory=dict)
    # CUDA major (12 on) -> {"driver_min": "580", "cuda": "13.0"}: the driver its toolkits need
    drivers: dict[str, Value] = field(default_factory=dict)

    @property
    def newest(self) -> str:
        return max(self.releases, key=release_key)

    def release(self, version: str) -> Release | None:
        return self.releases.get(version)

    def release_versioned_names(self) -> frozenset[str]:
        """Packages that carry the RAPIDS release as their version (cudf 22.08.00 ...)."""
        names = {"rapids", *self.libraries}
        for r in self.releases.values():
            for fact in ("members", "members_pip"):
                if r.get(fact).known:
                    names.update(r.get(fact).value)
        return frozenset(names)

    def origin(self, pointer: str) -> str:
        """'integration/22.08/conda/recipes/versions.yaml:54' -> the repository, commit, path."""
        path = pointer.rsplit(":", 1)[0]
        return self.sources.get(path, pointer)


def release_key(version: str) -> tuple[int, int]:
    m = _CALVER.match(version)
    if not m:
        raise ValueError(f"{version!r} is not a RAPIDS release (YY.MM)")
    return int(m.group(1)), int(m.group(2))


def is_release(text: str) -> bool:
    return bool(_CALVER.match(text))


def _value(raw: dict[str, Any]) -> Value:
    return Value(raw["value"], tuple(raw.get("from", ())), raw.get("note", ""))


def parse_record(data: dict[str, Any]) -> Record:
    if data.get("schema") != "envcheck.rapids-record/1":
        raise ValueError(f"unknown record schema {data.get('schema')!r}")
    patches = data.get("patches", {})
    releases = {
        v: Release(
            v,
            {k: _value(f) for k, f in facts.items()},
            {
                p: {k: _value(f) for k, f in pf.items()}
                for p, pf in patches.get(v, {}).items()
            },
        )
        for v, facts in data["releases"].items()
    }
    after = {k: _value(f) for k, f in data.get("after", {}).items()}
    floors = {k: _value(f) for k, f in data.get("floors", {}).items()}
    libraries = {k: _value(f) for k, f in data.get("libraries", {}).items()}
    drivers = {k: _value(f) for k, f in data.get("drivers", {}).items()}
    return Record(releases, after, dict(data.get("sources", {})), floors, libraries, drivers)


@cache
def load_record(path: Path = TABLE) -> Record:
    return parse_record(json.loads(Path(path).read_text()))
