"""A conda-lock file (version 1 or 2) as a ``Lock``: its packages with their dependencies, and
the metadata envcheck build keeps in it. Standard library and PyYAML (verify runs it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.lockfile.model import META, Exclusion, Lock, LockedPackage
from envcheck.lockfile.package import locked_package

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


def condalock_lock(path: Path, data: Any, sha256: str) -> Lock:
    """The Lock of a conda-lock document; ValueError naming what is wrong with it."""
    packages = tuple(_locked(i, p) for i, p in enumerate(_package_list(data)))
    meta = data["metadata"]
    if not isinstance(meta, dict):
        raise ValueError("'metadata' is not a mapping")
    platforms = tuple(str(p) for p in meta.get("platforms") or ())
    channels = tuple(
        str(c.get("url", "")) if isinstance(c, dict) else str(c) for c in meta.get("channels") or ()
    )
    custom = meta.get("custom_metadata") or {}
    if not isinstance(custom, dict):
        raise ValueError("'metadata.custom_metadata' is not a mapping")
    return Lock(
        path=path,
        format="conda-lock",
        platforms=platforms or tuple(dict.fromkeys(p.platform for p in packages)),
        packages=packages,
        sha256=sha256,
        channels=channels,
        sources=tuple(str(s) for s in meta.get("sources") or ()),
        **_envcheck_metadata(path, custom),
    )


def _package_list(data: object) -> list[Any]:
    if not isinstance(data, dict) or "package" not in data or "metadata" not in data:
        raise ValueError("no 'metadata' and 'package' sections")
    if data.get("version") not in (1, 2):
        raise ValueError(f"unsupported lock version {data.get('version')!r}")
    packages = data["package"]
    if not isinstance(packages, list):
        raise ValueError("'package' is not a list")
    return packages


def _locked(index: int, dep: object) -> LockedPackage:
    if not isinstance(dep, dict):
        raise ValueError(f"package[{index}] is not a mapping")
    for key in ("name", "version", "manager", "platform", "url"):
        if not isinstance(dep.get(key), (str, int, float)) or dep.get(key) == "":
            raise ValueError(f"package[{index}]: field '{key}' missing or empty")
    manager = str(dep["manager"])
    if manager not in ("conda", "pip"):
        raise ValueError(f"package[{index}]: manager {manager!r} is neither conda nor pip")
    deps = dep.get("dependencies") or {}
    if not isinstance(deps, dict):
        raise ValueError(f"package[{index}]: 'dependencies' is not a mapping")
    hashes = dep.get("hash")
    md5, sha256 = (
        (hashes.get("md5"), hashes.get("sha256")) if isinstance(hashes, dict) else ("", "")
    )
    return locked_package(
        str(dep["name"]),
        str(dep["version"]),
        manager,
        str(dep["platform"]),
        str(dep["url"]),
        str(dep.get("build") or ""),
        (),
        str(md5) if md5 else None,
        str(sha256) if sha256 else None,
        deps,
    )


def _envcheck_metadata(path: Path, custom: dict[Any, Any]) -> dict[str, Any]:
    """envcheck build's keys of custom_metadata as Lock's fields; none when it has none."""
    if f"{META}recipe_hash" not in custom:
        return {}
    try:
        vps = json.loads(custom.get(f"{META}virtual_packages", "{}"))
        excl = tuple(
            Exclusion(e["name"], e["reason"]) for e in json.loads(custom[f"{META}exclude"])
        )
        data = tuple(json.loads(custom.get(f"{META}channel_data", "[]")))
    except (KeyError, TypeError, ValueError) as e:
        raise BadInput(f"{path}: envcheck metadata is damaged ({e})") from None
    _check_virtual_packages(path, vps)
    return {
        "recipe": str(custom.get(f"{META}recipe", "")),
        "recipe_hash": str(custom[f"{META}recipe_hash"]),
        "virtual_packages": vps,
        "exclusions": excl,
        "channel_data": data,
    }


_VP_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")  # __cuda, __glibc, __linux: numbers


def _check_virtual_packages(path: Path, vps: Any) -> None:
    """The recorded virtual packages are versions (a hand-edited `__glibc: banana` is not)."""
    if not isinstance(vps, dict):
        raise BadInput(f"{path}: envcheck metadata is damaged (virtual_packages is not a mapping)")
    for platform, packages in vps.items():
        if not isinstance(packages, dict):
            raise BadInput(f"{path}: envcheck metadata is damaged (virtual_packages.{platform})")
        for name, version in packages.items():
            if name in ("__cuda", "__glibc", "__linux") and not (
                isinstance(version, str) and _VP_VERSION.match(version)
            ):
                raise BadInput(
                    f"{path}: virtual package {name} {version!r} ({platform}) is not a version"
                )
