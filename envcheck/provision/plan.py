"""What a lock asks to install on one platform: conda records and pip wheels, with their hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput
from envcheck.inputs import check_regular
from envcheck.lockfile.model import LockedPackage
from envcheck.lockfile.read import MAX_LOCK_BYTES, read_platform
from envcheck.record import frozen


@frozen
class Plan:
    lock: Path
    lock_sha256: str  # of the lock file's bytes: the stamp and the image label carry it
    platform: str
    records: tuple[Any, ...]  # rattler RepoDataRecords, in the lock's order
    conda: tuple[LockedPackage, ...]  # the files to fetch and check, one per record
    pip: tuple[LockedPackage, ...]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def read_plan(lock: Path, platform: str | None) -> Plan:
    """Read a conda-lock file or a pixi.lock (py-rattler reads both) for ``platform``.

    ``platform`` defaults to this machine's. BadInput when the lock is missing, unreadable,
    lacks the platform (naming the ones it has), or has a package without a hash.
    """
    check_regular(lock, "lock", MAX_LOCK_BYTES)  # a FIFO or /dev/zero would never hash
    lock_sha256 = file_sha256(lock)
    want, records, packages = read_platform(lock, platform)
    for p in packages:
        if not p.sha256 and not p.md5:
            raise BadInput(f"{lock}: {p.manager} package {p.name} {p.version} has no hash to check")
        if p.manager == "pip" and not p.sha256:
            raise BadInput(f"{lock}: pip package {p.name} {p.version} has no sha256")
    conda = tuple(p for p in packages if p.manager == "conda")
    pip = tuple(p for p in packages if p.manager == "pip")
    return Plan(lock, lock_sha256, want, records, conda, pip)
