"""What a lock asks to install on one platform: conda records and pip wheels, with their hashes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput


@dataclass(frozen=True)
class Artifact:
    """One file to fetch and check: a conda package or a pip wheel."""

    name: str
    version: str
    url: str
    file_name: str
    sha256: str | None
    md5: str | None
    kind: str  # "conda" or "pip"


@dataclass(frozen=True)
class Plan:
    lock: Path
    lock_sha256: str  # of the lock file's bytes: the stamp and the image label carry it
    platform: str
    records: tuple[Any, ...]  # rattler RepoDataRecords, in the lock's order
    conda: tuple[Artifact, ...]
    pip: tuple[Artifact, ...]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _hex(value: bytes | None) -> str | None:
    return value.hex() if value else None


def read_plan(lock: Path, platform: str | None) -> Plan:
    """Read a conda-lock file or a pixi.lock (py-rattler reads both) for ``platform``.

    ``platform`` defaults to this machine's. BadInput when the lock is missing, unreadable,
    lacks the platform (naming the ones it has), or has a package without a hash.
    """
    import rattler

    if not lock.is_file():
        raise BadInput(f"lock {lock} does not exist")
    lock_sha256 = file_sha256(lock)
    try:
        lf = rattler.LockFile.from_path(lock)
    except Exception as e:  # rattler raises its own exception types for parse errors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{lock} is not a readable conda-lock or pixi lock: {first}") from None
    env = lf.default_environment()
    if env is None:
        names = ", ".join(n for n, _ in lf.environments()) or "none"
        raise BadInput(f"{lock} has no default environment (it has: {names})")
    have = {p.name: p for p in env.platforms()}
    want = platform or str(rattler.Platform.current())
    if want not in have:
        has = ", ".join(sorted(have)) or "none"
        raise BadInput(f"{lock} has no packages for platform {want}; it has: {has}")
    records = tuple(env.conda_repodata_records_for_platform(have[want]) or ())
    conda = tuple(
        Artifact(
            str(r.name.normalized),
            str(r.version),
            r.url,
            r.file_name,
            _hex(r.sha256),
            _hex(r.md5),
            "conda",
        )
        for r in records
    )
    pip = []
    for p in env.pypi_packages_for_platform(have[want]) or ():
        h = p.hashes
        url = p.location
        file_name = url.rsplit("/", 1)[-1].split("#")[0]
        sha, md5 = (_hex(h.sha256), _hex(h.md5)) if h else (None, None)
        pip.append(Artifact(p.name, p.version, url, file_name, sha, md5, "pip"))
    for a in (*conda, *pip):
        if not a.sha256 and not a.md5:
            raise BadInput(f"{lock}: {a.kind} package {a.name} {a.version} has no hash to check")
        if a.kind == "pip" and not a.sha256:
            raise BadInput(f"{lock}: pip package {a.name} {a.version} has no sha256")
    return Plan(lock, lock_sha256, want, records, conda, tuple(pip))
