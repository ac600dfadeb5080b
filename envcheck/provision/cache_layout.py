"""Where envcheck's package cache keeps a package: the checked archive and its unpacked
folder. Imports nothing of envcheck: the linker child names the same paths as fetch.py and
unpacked.py without importing them."""

from __future__ import annotations

from pathlib import Path


def archive_path(cache: Path, sha256: str | None, md5: str | None, file_name: str) -> Path:
    """``CACHE/archives/<sha256, else md5-<md5>>/<file name>``: one folder per checked key."""
    return cache / "archives" / (sha256 or f"md5-{md5}") / file_name


def unpacked_folder(cache: Path, file_name: str) -> Path:
    """``CACHE/pkgs/<name>-<version>-<build>/``: py-rattler's package cache layout."""
    return cache / "pkgs" / archive_stem(file_name)


def archive_stem(file_name: str) -> str:
    """``<name>-<version>-<build>``: the archive's file name without .conda or .tar.bz2."""
    for suffix in (".conda", ".tar.bz2"):
        if file_name.endswith(suffix):
            return file_name[: -len(suffix)]
    return file_name
