"""What envcheck knows of a lock: frozen values every reader returns, whatever parsed the file.

Standard library only (verify builds these on Python 3.8 inside the environments it checks).
@frozen (envcheck/record.py): a tenth of dataclasses' import time. PipPackage, which needs a
dataclasses option, lives in pip_package.py, imported by the build side only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from envcheck.record import frozen

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

META = "envcheck."  # prefix of envcheck's keys in conda-lock's custom_metadata


@frozen
class Exclusion:
    """A package a recipe keeps out of its environments, and why (recorded in the lock)."""

    name: str
    reason: str


@frozen
class LockedPackage:
    """One package of a lock on one platform, as verify compares it and install fetches it."""

    name: str  # pip names PEP 503-normalised; conda names as written (canonical already)
    version: str
    build: str  # "" for pip packages
    manager: str  # "conda" or "pip"
    platform: str  # "linux-64", ...
    virtual: tuple[tuple[str, str], ...] = ()  # this record's (__glibc, ">=2.17") constraints
    url: str = ""
    md5: str | None = None
    sha256: str | None = None

    @property
    def file_name(self) -> str:
        """The file the url names: what install caches and reports."""
        return self.url.rsplit("/", 1)[-1].split("#")[0]


def build_from_url(url: str) -> str:
    """conda file names are <name>-<version>-<build>.conda|.tar.bz2; take the build."""
    fname = url.rsplit("/", 1)[-1]
    for ext in (".conda", ".tar.bz2"):
        if fname.endswith(ext):
            parts = fname[: -len(ext)].rsplit("-", 2)
            return parts[2] if len(parts) == 3 else ""
    return ""


def virtual_constraints(dependencies: Mapping[Any, Any]) -> tuple[tuple[str, str], ...]:
    """The (__name, spec) pairs of a record's dependencies, sorted: the system it needs."""
    return tuple(
        sorted((str(k), str(v)) for k, v in dependencies.items() if str(k).startswith("__"))
    )


@frozen
class Lock:
    """A lock written by envcheck build: its packages and the metadata build keeps in it."""

    path: Path
    recipe: str
    recipe_hash: str
    platforms: tuple[str, ...]
    channels: tuple[str, ...]
    virtual_packages: Mapping[str, Mapping[str, str]]  # platform -> name -> version
    exclusions: tuple[Exclusion, ...]
    channel_data: tuple[str, ...]  # what each channel's package data was when solved
    packages: tuple[LockedPackage, ...]

    def for_platform(self, platform: str) -> dict[tuple[str, str], LockedPackage]:
        """(manager, name) -> package."""
        return {(p.manager, p.name): p for p in self.packages if p.platform == platform}
