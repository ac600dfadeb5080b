"""One platform of a lock as py-rattler reads it (a conda-lock file or a pixi.lock): the records
install links, and each package as a plain row.

The bytes hashed are the bytes parsed: py-rattler reads a private copy of them
(inputs.private_copy), so a change to the file between the hash and the parse cannot go
unseen. Nothing of envcheck's lock model is imported: ``read_lock_records`` (read.py, which the
install's plan reads) makes its packages of the rows, and a linker child started apart
(provision/_link_child.py) reads its records with this module.

A row: ``[manager, name, version, url, build, depends, md5, sha256]``; ``depends`` a list of
match specs, the hashes hex or None.
"""

from __future__ import annotations

import hashlib

from envcheck.errors import BadInput
from envcheck.inputs import MAX_LOCK_BYTES, private_copy

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


def read(lock: str, platform: str | None) -> tuple[str, str, tuple[Any, ...], list[list[Any]]]:
    """(sha256, platform, rattler's RepoDataRecords, rows) of ``lock`` for ``platform`` (None:
    this machine's). BadInput when the lock is not a regular file, is too large, does not
    parse, or lacks the platform (naming the ones it has)."""
    with private_copy(lock, "lock", MAX_LOCK_BYTES) as (data, copy):  # no FIFO or device
        got = read_platform(lock, data, copy, platform, None)
    return got["sha256"], got["platform"], got["records"], got["rows"]


def read_platform(
    lock: str, data: bytes, copy: str, platform: str | None, environment: str | None
) -> dict[str, Any]:
    """``read``'s values by name, of ``data`` (the bytes of the file ``lock``, which the file
    ``copy`` holds: inputs.private_copy), with the lock's "format", "platforms" and
    "environment": the environment read (None: the default one)."""
    import rattler

    try:
        lf = rattler.LockFile.from_path(copy)
    except Exception as e:  # rattler raises its own exception types for parse errors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{lock} is not a readable conda-lock or pixi lock: {first}") from None
    env = _environment(lf, lock, environment)
    want, records, rows, have = _platform(rattler, env, lock, platform)
    pixi = b"\nenvironments:" in data and b"\nmetadata:" not in data
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "platform": want,
        "records": records,
        "rows": rows,
        "format": "pixi" if pixi else "conda-lock",
        "platforms": tuple(sorted(have)),
        "environment": environment or "default",
    }


def _environment(lf: Any, lock: str, name: str | None) -> Any:
    """The environment ``name`` (None: the default one); BadInput naming those it has."""
    env = lf.default_environment() if name is None else lf.environment(name)
    try:  # `environments: {}` gives an Environment object that wraps nothing
        usable = env is not None and env.platforms() is not None
    except AttributeError:
        usable = False
    if not usable:
        names = ", ".join(n for n, _ in lf.environments()) or "none"
        which = "default environment" if name is None else f"environment {name!r}"
        raise BadInput(f"{lock} has no {which} (it has: {names})")
    return env


def _platform(
    rattler: Any, env: Any, lock: str, platform: str | None
) -> tuple[str, tuple[Any, ...], list[list[Any]], dict[str, Any]]:
    have = {p.name: p for p in env.platforms()}
    want = platform or str(rattler.Platform.current())
    if want not in have:
        has = ", ".join(sorted(have)) or "none"
        raise BadInput(f"{lock} has no packages for platform {want}; it has: {has}")
    records = tuple(env.conda_repodata_records_for_platform(have[want]) or ())
    rows: list[list[Any]] = [
        ["conda", str(r.name.normalized), str(r.version), str(r.url), str(r.build),
         [str(d) for d in r.depends], _hex(r.md5), _hex(r.sha256)]
        for r in records
    ]  # fmt: skip
    for p in env.pypi_packages_for_platform(have[want]) or ():
        h = p.hashes
        md5, sha = (_hex(h.md5), _hex(h.sha256)) if h else (None, None)
        requires = [str(r) for r in getattr(p, "requires_dist", None) or ()]
        rows.append(["pip", str(p.name), str(p.version), _url(str(p.location)), "", requires,
                     md5, sha])
    return want, records, rows, have


def _url(location: str) -> str:
    """A PyPI package's location as a URL: py-rattler gives a local wheel (``pypi:
    file:///...whl`` in the lock) as the path alone; it is the file:// URL the lock wrote."""
    if location.startswith("/"):
        from pathlib import Path

        return Path(location).as_uri()
    return location


def _hex(value: bytes | None) -> str | None:
    return value.hex() if value else None
