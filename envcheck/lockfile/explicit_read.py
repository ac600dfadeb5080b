"""A conda explicit file (``@EXPLICIT``, one package URL a line, as ``conda list --explicit``
and ``conda-lock --kind explicit`` write) as a ``Lock``; pip packages are the comment lines
``# pip NAME @ URL#sha256=HEX`` conda-lock writes. It records no dependencies. Standard library
only."""

from __future__ import annotations

from pathlib import Path

from envcheck.lockfile.model import Lock, LockedPackage, file_parts
from envcheck.lockfile.package import locked_package

MARK = "@EXPLICIT"


def is_explicit(text: str) -> bool:
    """The text has an ``@EXPLICIT`` line before any package URL."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line == MARK
    return False


def explicit_lock(path: Path, text: str, sha256: str) -> Lock:
    """The Lock of an explicit file; ValueError naming a line that is not a package URL.

    Its platform is the ``# platform:`` comment, else the subdir of its first non-noarch URL.
    """
    named = ""
    urls: list[str] = []
    pip: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("# platform:"):
            named = line.split(":", 1)[1].strip()
        elif line.startswith("# pip "):
            pip.append(line[len("# pip ") :])
        elif line and not line.startswith("#") and line != MARK:
            urls.append(line)
    subdirs = [u.split("#")[0].rsplit("/", 2)[-2] for u in urls if u.count("/") >= 2]
    platform = named or next((s for s in subdirs if s != "noarch"), "noarch")
    packages = tuple(_locked(u, platform) for u in urls) + tuple(_pip(p, platform) for p in pip)
    return Lock(path=path, format="explicit", platforms=(platform,), packages=packages,
                sha256=sha256, channels=_channels(urls))


def _locked(line: str, platform: str) -> LockedPackage:
    url, _, digest = line.partition("#")
    parts = file_parts(url)
    if parts is None:
        raise ValueError(f"{line!r} is not a conda package URL")
    name, version, build = parts
    md5 = digest if len(digest) == 32 else None
    sha256 = digest if len(digest) == 64 else None
    return locked_package(name, version, "conda", platform, url, build, (), md5, sha256)


def _pip(line: str, platform: str) -> LockedPackage:
    """``NAME @ URL#sha256=HEX``; the version is the one the wheel's or sdist's name carries."""
    name, at, rest = line.partition(" @ ")
    if not at:
        raise ValueError(f"'# pip {line}' is not 'NAME @ URL'")
    url, _, digest = rest.strip().partition("#sha256=")
    fname = url.rsplit("/", 1)[-1]
    if fname.endswith(".whl"):
        version = fname.split("-")[1] if fname.count("-") >= 4 else ""
    else:
        stem = next((fname[: -len(e)] for e in (".tar.gz", ".zip") if fname.endswith(e)), fname)
        version = stem.rsplit("-", 1)[1] if "-" in stem else ""
    return locked_package(name.strip(), version, "pip", platform, url, "", (), None, digest or None)


def _channels(urls: list[str]) -> tuple[str, ...]:
    """The channels the URLs come from, in order: a URL less its subdir and file name."""
    return tuple(dict.fromkeys(u.split("#")[0].rsplit("/", 2)[0] for u in urls if "/" in u))
