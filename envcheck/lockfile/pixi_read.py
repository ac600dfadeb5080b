"""A pixi.lock (format 4 to 7) as a ``Lock``: one environment's packages on each platform, with
their dependencies. Standard library and PyYAML (verify runs it).

An environment lists, per platform, references to the file's ``packages``: ``conda: URL`` or
``pypi: URL`` (format 4 and 5 records name their kind as ``kind:`` and keep the URL under
``url:``), or ``conda_source: NAME[hash] @ PATH`` for a package pixi builds from source. A
conda record's name, version and build come from its file name unless it writes them.
"""

from __future__ import annotations

from pathlib import Path

from envcheck.errors import BadInput
from envcheck.lockfile.model import Lock, LockedPackage, file_parts
from envcheck.lockfile.package import locked_package

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

FORMATS = (4, 5, 6, 7)
_KINDS = ("conda", "pypi", "conda_source")


def is_pixi(data: Any) -> bool:
    """A pixi.lock's document: a version and ``environments`` (conda-lock has ``metadata``)."""
    return isinstance(data, dict) and "environments" in data and "metadata" not in data


def pixi_lock(path: Path, data: dict[Any, Any], sha256: str, environment: str | None) -> Lock:
    """The Lock of ``environment`` (None: "default"); ValueError naming what is wrong."""
    if data.get("version") not in FORMATS:
        have = ", ".join(map(str, FORMATS))
        raise ValueError(f"unsupported pixi.lock version {data.get('version')!r} (reads {have})")
    environments = data.get("environments")
    records = data.get("packages") or []
    if not isinstance(environments, dict) or not isinstance(records, list):
        raise ValueError("'environments' is not a mapping or 'packages' not a list")
    name = environment or "default"
    if name not in environments:
        has = ", ".join(map(str, environments)) or "none"
        raise BadInput(f"{path} has no environment {name!r} (it has {has})")
    env = environments[name] or {}
    index = _index(records)
    by_platform = env.get("packages") or {}
    if not isinstance(by_platform, dict):
        raise ValueError(f"environments.{name}.packages is not a mapping")
    packages = []
    for platform, refs in by_platform.items():
        for i, ref in enumerate(refs or ()):
            record = _record(index, ref, f"environments.{name}.packages.{platform}[{i}]")
            packages.append(_locked(record, str(platform)))
    channels = tuple(
        str(c.get("url", "")) if isinstance(c, dict) else str(c) for c in env.get("channels") or ()
    )
    listed = tuple(
        str(p.get("name", "")) if isinstance(p, dict) else str(p)
        for p in data.get("platforms") or ()
    )
    return Lock(
        path=path,
        format="pixi",
        platforms=listed or tuple(map(str, by_platform)),
        packages=tuple(packages),
        sha256=sha256,
        environment=name,
        channels=channels,
    )


def _key(record: dict[Any, Any]) -> tuple[str, str]:
    """(kind, location): what an environment's reference names a record by."""
    for kind in _KINDS:
        if kind in record:
            return kind, str(record[kind])
    kind = str(record.get("kind", ""))  # formats 4 and 5
    return kind, str(record.get("url") or record.get("path") or "")


def _index(records: list[Any]) -> dict[tuple[str, str], list[dict[Any, Any]]]:
    index: dict[tuple[str, str], list[dict[Any, Any]]] = {}
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise ValueError(f"packages[{i}] is not a mapping")
        index.setdefault(_key(record), []).append(record)
    return index


def _record(index: dict[Any, list[dict[Any, Any]]], ref: Any, where: str) -> dict[Any, Any]:
    """The record a reference names; its other keys (pixi adds them when a location is shared)
    pick among records of one location."""
    if not isinstance(ref, dict):
        raise ValueError(f"{where} is not a mapping")
    kind = next((k for k in _KINDS if k in ref), "")
    found = index.get((kind, str(ref.get(kind, ""))), [])
    extra = {k: v for k, v in ref.items() if k != kind}
    matching = [r for r in found if all(r.get(k) == v for k, v in extra.items())]
    if not (matching or found):
        raise ValueError(f"{where} names {ref.get(kind)!r}, which 'packages' does not hold")
    return (matching or found)[0]


def _locked(record: dict[Any, Any], platform: str) -> LockedPackage:
    kind, location = _key(record)
    hashes = (record.get("md5"), record.get("sha256"))
    md5, sha256 = (str(h) if h else None for h in hashes)
    if kind == "pypi":
        requires = [str(r) for r in record.get("requires_dist") or ()]
        name, version = str(record.get("name", "")), str(record.get("version", ""))
        return locked_package(name, version, "pip", platform, location, "", requires, md5, sha256)
    depends = [str(d) for d in record.get("depends") or ()]
    if kind == "conda_source":
        name = location.split("[")[0].split(" @")[0].strip()
        version = str(record.get("version") or "")
        return locked_package(name, version, "conda", platform, "", "", depends, md5, sha256)
    stem = _stem(location)
    name = str(record.get("name") or stem[0])
    version = str(record.get("version") or stem[1])
    build = str(record.get("build") or stem[2])
    return locked_package(name, version, "conda", platform, location, build, depends, md5, sha256)


def _stem(url: str) -> tuple[str, str, str]:
    parts = file_parts(url)
    if parts is None:
        raise ValueError(f"{url!r} is not a conda file name (<name>-<version>-<build>.conda)")
    return parts
