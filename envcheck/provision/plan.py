"""What a lock asks to install on one platform: conda records and pip wheels, with their hashes.
The install's pipeline (pipeline.py, ``read_plan``) makes it of the lock; prefix.py, linker.py
and pip_part.py read it."""

from __future__ import annotations

from pathlib import Path

from envcheck.lockfile.model import LockedPackage
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
