"""The one way a lock's record becomes a ``LockedPackage``, whichever format or parser gave it,
and the checks every lock's packages pass.

Standard library only (verify reads locks on Python 3.8).
"""

from __future__ import annotations

import re
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.lockfile.model import LockedPackage, build_from_url, virtual_constraints
from envcheck.lockfile.names import normalize_name

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any


def locked_package(
    name: str,
    version: str,
    manager: str,
    platform: str,
    url: str,
    build: str | None,
    depends: Iterable[str],
    md5: str | None = None,
    sha256: str | None = None,
    dependencies: Mapping[Any, Any] | None = None,
) -> LockedPackage:
    """A LockedPackage; ``depends`` the specs as the lock writes them ("python >=3.8"), or
    ``dependencies`` its name -> spec mapping (conda-lock's) instead."""
    build = build or ""
    if manager == "conda" and not build:
        build = build_from_url(url)
    if dependencies is None:
        depends = tuple(depends)
        dependencies = split_specs(depends)
    else:
        depends = joined_specs(dependencies)
    return LockedPackage(
        # pip names compare PEP 503-normalised; conda names are canonical as written
        normalize_name(name) if manager == "pip" else name,
        version,
        build,
        manager,
        platform,
        virtual_constraints(dependencies),
        url,
        md5 or None,
        sha256 or None,
        depends,
    )


def split_specs(depends: Iterable[str]) -> dict[str, str]:
    """{"__glibc": ">=2.17", ...} of specs "name spec"; a bare name's spec is ''."""
    return dict(d.split(" ", 1) if " " in d else (d, "") for d in depends)


def joined_specs(dependencies: Mapping[Any, Any]) -> tuple[str, ...]:
    """conda-lock's ``dependencies`` mapping (name -> spec) as specs: "python >=3.8"."""
    return tuple(
        f"{name} {spec}" if spec and spec != "*" else str(name)
        for name, spec in dependencies.items()
    )


def packages_from_rows(rows: list[list[Any]], platform: str) -> tuple[LockedPackage, ...]:
    """The packages of ``rattler_read``'s rows, for ``platform``."""
    return tuple(
        locked_package(name, version, manager, platform, url, build, depends, md5, sha256)
        for manager, name, version, url, build, depends, md5, sha256 in rows
    )


# one clause of a conda version spec: an optional operator, then a version that starts with a
# digit (`>=2.17`, `2.17.*`, `<3.0.a0`) or `*`
_SPEC_CLAUSE = re.compile(r"\s*(?:(?:>=|<=|==|!=|~=|>|<|=)\s*)?(?:[0-9][0-9A-Za-z._+*]*|\*)\s*")


def check_packages(path: Path, packages: tuple[LockedPackage, ...]) -> None:
    """BadInput with one line when a lock lists no packages, has a virtual-package constraint
    that is not a version spec, or lists a package twice for one platform."""
    if not packages:
        raise BadInput(f"{path}: the lock lists no packages (an empty lock checks nothing)")
    for p in packages:
        check_virtual(path, p)
    check_unique(path, packages)


def check_virtual(path: Path, package: LockedPackage) -> None:
    """A record's __glibc / __cuda constraint must be a version spec ('banana' is not one)."""
    for key, spec in package.virtual:
        if key not in ("__glibc", "__cuda", "__linux"):
            continue
        clauses = re.split(r"[,|]", spec)  # '' (any version): what conda-lock writes for a name
        if spec.strip() not in ("", "None") and not all(map(_SPEC_CLAUSE.fullmatch, clauses)):
            raise BadInput(
                f"{path}: {package.name} needs {key} {spec!r}, which is not a version spec"
            )


def check_unique(path: Path, packages: Iterable[LockedPackage]) -> None:
    """BadInput naming both records when a lock lists one package twice for one platform (by
    one manager): installing both lets the last one linked win, whichever it is."""
    seen: dict[tuple[str, str, str], LockedPackage] = {}
    for p in packages:
        key = (p.platform, p.manager, p.name)
        first = seen.setdefault(key, p)
        if first is not p:
            raise BadInput(
                f"{path}: {p.platform} lists {p.manager} package {p.name} twice: "
                f"{_record(first)} and {_record(p)} (a lock has one record per package and "
                "platform)"
            )


def _record(p: LockedPackage) -> str:
    return f"{p.version}" + (f" {p.build}" if p.build else "") + f" ({p.file_name})"
