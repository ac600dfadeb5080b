"""Installed packages: conda-meta records and *.dist-info names on sys.path."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from .caches import _cached, dirs_key
from .procfs import names_in

_SEPARATORS = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 name normalisation, also right for conda names (already lower-case, dashes)."""
    return _SEPARATORS.sub("-", name).lower()


def _conda_meta_packages(prefix: Path) -> tuple[dict[str, str], dict[str, str]] | None:
    """name -> version and name -> build from <prefix>/conda-meta; None when not a conda env.

    conda names each record `<name>-<version>-<build>.json`; version and build never contain
    '-', so the file name alone is enough. Reading the JSON (which lists every file of the
    package, megabytes for a RAPIDS env) would cost far more than the whole collection.
    """
    meta = prefix / "conda-meta"
    try:
        names = os.listdir(meta)
    except OSError:
        return None
    versions: dict[str, str] = {}
    builds: dict[str, str] = {}
    for fname in names:
        if not fname.endswith(".json"):
            continue  # "history", "pinned", ".lock"
        parts = fname[: -len(".json")].rsplit("-", 2)
        if len(parts) != 3:
            continue
        name = parts[0]  # conda names are canonical already ("_libgcc_mutex" stays)
        versions[name], builds[name] = parts[1], parts[2]
    return dict(sorted(versions.items())), dict(sorted(builds.items()))


_DIST_INFO = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+?)(?:-py[\d.]+)?\.(?:dist|egg)-info$")


def _dist_info_packages(path: list[str]) -> dict[str, str]:
    """Installed Python distributions, from the `*.dist-info` names on sys.path.

    The same directories importlib.metadata.distributions() finds, but read from their names
    (`<name>-<version>.dist-info`) instead of parsing every METADATA file, on every worker. A
    name that does not parse falls back to importlib.metadata for that one distribution.
    First entry on sys.path wins, as for imports.
    """
    out: dict[str, str] = {}
    for entry in path:
        directory = os.path.abspath(entry or ".")
        # Per directory: Dask puts its scratch directories on sys.path, and they change all
        # the time; only they are listed again.
        for name, version in _cached(f"dist-info:{directory}", dirs_key([directory]),
                                     lambda d=directory: _dists_in(d)):
            out.setdefault(name, version)
    return dict(sorted(out.items()))


def _dists_in(directory: str) -> tuple[tuple[str, str], ...]:
    found = []
    for fname in names_in(directory):
        if not fname.endswith(("dist-info", "egg-info")):
            continue
        m = _DIST_INFO.match(fname)
        if m:
            found.append((normalize_name(m["name"]), m["version"]))
        else:
            meta = _metadata_of(os.path.join(directory, fname))
            if meta is not None:
                found.append(meta)
    return tuple(found)


def _metadata_of(path: str) -> tuple[str, str] | None:
    """(name, version) from the headers of a distribution's METADATA (PKG-INFO for an
    egg-info): read directly, as importlib.metadata would, without importing it."""
    for fname in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(path, fname), encoding="utf-8", errors="replace") as f:
                head = f.read(64 * 1024)
        except OSError:
            continue
        fields: dict[str, str] = {}
        for line in head.splitlines():
            if not line.strip():
                break  # the headers end at the first blank line
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version"):
                fields.setdefault(key, value.strip())
        if fields.get("Name") and fields.get("Version"):
            return normalize_name(fields["Name"]), fields["Version"]
    return None


# ---- NVML -----------------------------------------------------------------------------------


def _site_dirs() -> list[str]:
    # every import root, not only '*-packages': `pip install --target DIR` + PYTHONPATH (as on
    # the GPU machines this was run on) puts the libucx / nvidia-nccl wheels elsewhere
    return [p for p in sys.path if p and not p.endswith(".zip")]
