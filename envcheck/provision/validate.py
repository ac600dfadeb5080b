"""Package metadata is untrusted input: every path a package would write stays inside the prefix.

Checked before anything links, on the unpacked package (its ``info/paths.json``, else
``info/files``, and the symlinks themselves): each path relative, normalised (no ``..``, ``.``
or empty parts, no NUL or backslash), listed once, present in the package as the type it
claims, with the size it claims; nothing unpacked outside info/ that the metadata does not
list; each symlink's target (listed or not) relative and inside the prefix from where it
sits; noarch entry point names plain file names. py-rattler's linker panics (the
process aborts) on some of these and writes outside the prefix on others.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
from collections.abc import Sequence
from pathlib import Path

from envcheck.errors import BadInput

MAX_PATH = 4096
# Bumped whenever a rule here changes: cache markers recording a validation under other rules
# (unpacked.py) are then validated again.
VALIDATION_RULES = 2


class UnsafePackage(BadInput):
    """A package whose metadata would write outside the prefix or lies about its files."""


def _bad(package: str, path: str, why: str) -> UnsafePackage:
    return UnsafePackage(f"package {package} is refused: {path!r} {why}")


def check_relative(package: str, path: object) -> str:
    """``path`` as a safe prefix-relative path, or UnsafePackage naming it."""
    if not isinstance(path, str) or not path:
        raise _bad(package, str(path), "is not a path")
    if len(path) > MAX_PATH or "\0" in path or "\\" in path:
        raise _bad(package, path, "is not a usable path (too long, NUL or backslash)")
    if path.startswith("/"):
        raise _bad(package, path, "is an absolute path (outside the prefix)")
    parts = path.split("/")
    if ".." in parts:
        raise _bad(package, path, "has '..' components (outside the prefix)")
    if "" in parts or "." in parts:
        raise _bad(package, path, "is not a normalised path")
    return path


def check_link_target(package: str, path: str, target: str) -> None:
    """A symlink at ``path`` pointing at ``target`` must resolve inside the prefix."""
    if target.startswith("/"):
        raise _bad(package, path, f"is a symlink to the absolute path {target!r}")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if joined == ".." or joined.startswith("../"):
        raise _bad(package, path, f"is a symlink to {target!r}, outside the prefix")


def _entries(folder: Path) -> list[dict]:
    paths_json = folder / "info" / "paths.json"
    if paths_json.is_file():
        try:
            data = json.loads(paths_json.read_bytes())
            entries = data["paths"]
        except (ValueError, KeyError, TypeError):
            raise UnsafePackage(f"package {folder.name}: info/paths.json is not readable") from None
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise UnsafePackage(f"package {folder.name}: info/paths.json has no list of paths")
        return entries
    files = folder / "info" / "files"
    if not files.is_file():
        raise UnsafePackage(f"package {folder.name} has neither info/paths.json nor info/files")
    lines = files.read_text(errors="surrogateescape").splitlines()
    return [{"_path": line} for line in lines if line]


def _check_entry(
    package: str, folder: Path, entry: dict, seen: set[str], modes: dict[str, tuple[int, int]]
) -> None:
    rel = check_relative(package, entry.get("_path"))
    if rel in seen:
        raise _bad(package, rel, "is listed twice")
    seen.add(rel)
    if rel not in modes:
        raise _bad(package, rel, "is listed but not in the package")
    mode, actual = modes[rel]
    kind = entry.get("path_type", "hardlink")
    if stat.S_ISLNK(mode):
        if kind not in ("softlink", "hardlink"):
            raise _bad(package, rel, f"is a symlink but listed as {kind}")
        check_link_target(package, rel, os.readlink(folder / rel))
        return
    if kind == "softlink":
        raise _bad(package, rel, "is listed as a symlink but is not one")
    if kind == "directory":
        if not stat.S_ISDIR(mode):
            raise _bad(package, rel, "is listed as a directory but is not one")
        return
    if not stat.S_ISREG(mode):
        raise _bad(package, rel, "is not a regular file")
    size = entry.get("size_in_bytes")
    if size is not None and (not isinstance(size, int) or size < 0 or size != actual):
        raise _bad(package, rel, f"claims {size!r} bytes, the file has {actual}")


def _check_entry_points(package: str, folder: Path) -> None:
    link = folder / "info" / "link.json"
    if not link.is_file():
        return
    try:
        data = json.loads(link.read_bytes())
        points = (data.get("noarch") or {}).get("entry_points") or []
    except (ValueError, AttributeError):
        raise UnsafePackage(f"package {package}: info/link.json is not readable") from None
    for point in points:
        name = str(point).partition("=")[0].strip()
        if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
            raise _bad(package, f"bin/{name}", "is a noarch entry point outside bin/")


def check_package(package: str, folder: Path, walk: Sequence[tuple]) -> int:
    """UnsafePackage naming ``package`` and the path; the number of paths checked.

    ``walk`` is the folder's verified listing (unpacked.walk: rel, ..., size, ..., mode last):
    what each path is comes from it, not from another stat of every file.
    """
    modes = {e[0]: (e[-1], e[3]) for e in walk}
    seen: set[str] = set()
    for entry in _entries(folder):
        _check_entry(package, folder, entry, seen, modes)
    _check_unlisted(package, folder, modes, seen)
    _check_entry_points(package, folder)
    return len(seen)


def _check_unlisted(
    package: str, folder: Path, modes: dict[str, tuple[int, int]], listed: set[str]
) -> None:
    """What the archive unpacked beyond its metadata: a file or symlink outside info/ that the
    metadata does not list (an archive member under another name than its paths.json says,
    an absolute member unpacked under the folder) is refused, and so is a symlink anywhere in
    the folder that points outside it, listed or not."""
    for rel, (mode, _) in modes.items():
        if stat.S_ISLNK(mode):
            check_link_target(package, rel, os.readlink(folder / rel))
        if stat.S_ISDIR(mode) or rel.startswith("info/") or rel in listed:
            continue
        raise _bad(package, rel, "is in the archive but not in its metadata")
