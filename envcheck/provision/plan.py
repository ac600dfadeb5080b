"""What a lock asks to install on one platform: conda records and pip wheels, with their hashes."""

from __future__ import annotations

from pathlib import Path

from envcheck.errors import BadInput
from envcheck.lockfile.model import LockedPackage
from envcheck.lockfile.read import read_lock_records
from envcheck.record import frozen

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


@frozen
class Plan:
    lock: Path
    lock_sha256: str  # of the lock file's bytes: the stamp and the image label carry it
    platform: str
    records: tuple[Any, ...]  # rattler RepoDataRecords, in the lock's order
    conda: tuple[LockedPackage, ...]  # the files to fetch and check, one per record
    pip: tuple[LockedPackage, ...]
    # url -> the size a conda record states (a pixi.lock's ``size``; conda-lock files have
    # none): the fetch reads no source past it
    sizes: dict[str, int]


def read_plan(lock: Path, platform: str | None) -> Plan:
    """Read a conda-lock file or a pixi.lock (py-rattler reads both) for ``platform``.

    ``platform`` defaults to this machine's. BadInput when the lock is missing, unreadable,
    lacks the platform (naming the ones it has), lists a package twice (naming both records),
    or has a package without a hash to check.
    """
    read = read_lock_records(lock, platform)
    for p in read.packages:
        if not p.sha256 and not p.md5:
            raise BadInput(f"{lock}: {p.manager} package {p.name} {p.version} has no hash to check")
        if p.manager == "pip" and not p.sha256:
            raise BadInput(f"{lock}: pip package {p.name} {p.version} has no sha256")
    return Plan(
        lock,
        read.sha256,
        read.platform,
        read.records,
        conda=tuple(p for p in read.packages if p.manager == "conda"),
        pip=tuple(p for p in read.packages if p.manager == "pip"),
        sizes={
            str(r.url): size
            for r in read.records
            if isinstance(size := getattr(r, "size", None), int) and size > 0
        },
    )
