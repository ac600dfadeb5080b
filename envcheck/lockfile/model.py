"""What envcheck knows of a lock: frozen values the one reader returns, whatever the format.

Standard library only (verify builds these on Python 3.8 inside the environments it checks).
@frozen (envcheck/record.py): a tenth of dataclasses' import time. PipPackage, which needs a
dataclasses option, lives in pip_package.py, imported by the build side only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from envcheck.record import field, frozen

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
    depends: tuple[str, ...] = ()  # what it requires, as the lock writes it: "numpy >=1.21"

    @property
    def file_name(self) -> str:
        """The file the url names: what install caches and reports."""
        return self.url.rsplit("/", 1)[-1].split("#")[0]

    @property
    def requires(self) -> tuple[str, ...]:
        """The names of what it requires (pip names PEP 503-normalised): its graph edges."""
        return tuple(dict.fromkeys(spec_name(d, self.manager) for d in self.depends))

    def label(self) -> str:
        """The name, version and build, as why prints a package."""
        return f"{self.name} {self.version}" + (f" {self.build}" if self.build else "")


_SEPARATORS = "-_."


def spec_name(spec: str, manager: str = "conda") -> str:
    """The package name a match spec or requirement starts with, lower-case; pip's normalised."""
    spec = spec.strip()
    end = 0
    while end < len(spec) and (spec[end].isalnum() or spec[end] in _SEPARATORS):
        end += 1
    name = (spec[:end] or spec).lower()
    if manager == "pip":
        for sep in "_.":
            name = name.replace(sep, "-")
        while "--" in name:
            name = name.replace("--", "-")
    return name


def file_parts(url: str) -> tuple[str, str, str] | None:
    """(name, version, build) of a conda file's name, <name>-<version>-<build>.conda|.tar.bz2;
    None for another name."""
    fname = url.rsplit("/", 1)[-1].split("#")[0]
    for ext in (".conda", ".tar.bz2"):
        if fname.endswith(ext):
            parts = fname[: -len(ext)].rsplit("-", 2)
            return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None
    return None


def build_from_url(url: str) -> str:
    """The build a conda file's name carries; "" for another name."""
    parts = file_parts(url)
    return parts[2] if parts else ""


def virtual_constraints(dependencies: Mapping[Any, Any]) -> tuple[tuple[str, str], ...]:
    """The (__name, spec) pairs of a record's dependencies, sorted: the system it needs."""
    return tuple(
        sorted((str(k), str(v)) for k, v in dependencies.items() if str(k).startswith("__"))
    )


@frozen
class Lock:
    """One environment of a lock file (conda-lock, pixi.lock or conda explicit), its packages
    on each platform read, and the metadata envcheck build keeps in a conda-lock file."""

    path: Path
    format: str  # "conda-lock", "pixi" or "explicit"
    platforms: tuple[str, ...]  # the platforms the lock has (all of them, even when one is read)
    packages: tuple[LockedPackage, ...]  # those of the platform(s) read, dependencies included
    platform: str = ""  # the one platform read ("" when every platform was)
    sha256: str = ""  # of the file's bytes, as read
    environment: str = "default"  # pixi.lock's environment; the one environment of the others
    channels: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # conda-lock's metadata.sources: the recipe file(s)
    recipe: str = ""  # the rest: envcheck build's metadata ("" and empty when not built by it)
    recipe_hash: str = ""
    virtual_packages: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    exclusions: tuple[Exclusion, ...] = ()
    channel_data: tuple[str, ...] = ()  # what each channel's package data was when solved
    records: tuple[Any, ...] = ()  # py-rattler's RepoDataRecords of the platform read, to link

    def for_platform(self, platform: str) -> dict[tuple[str, str], LockedPackage]:
        """(manager, name) -> package."""
        return {(p.manager, p.name): p for p in self.packages if p.platform == platform}

    def by_platform(self) -> dict[str, dict[str, LockedPackage]]:
        """platform -> name -> package, for every platform read (a pip and a conda package of
        one name: the conda one)."""
        out: dict[str, dict[str, LockedPackage]] = {}
        for p in sorted(self.packages, key=lambda p: p.manager != "pip"):
            out.setdefault(p.platform, {})[p.name] = p
        return out
