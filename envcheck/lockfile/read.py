"""The one way envcheck reads a lock: ``read_lock`` makes a ``Lock`` of a conda-lock file
(version 1 or 2), a pixi.lock (format 4 to 7) or a conda explicit file, dependencies included.

Without ``records`` the file is parsed here (standard library and PyYAML: verify runs this on
Python 3.8): ``document`` loads the YAML, ``condalock_read``, ``pixi_read`` and
``explicit_read`` make the Lock. With ``records`` (``read_lock_records``, which install calls),
py-rattler parses it (``rattler_read``, install extra) and the Lock carries the RepoDataRecords
install links. Either way the packages pass the same checks (``package.check_packages``). A
test holds the two equal on every fixture lock.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.inputs import MAX_LOCK_BYTES, private_copy, read_bytes
from envcheck.lockfile.model import Lock
from envcheck.lockfile.package import check_packages, packages_from_rows

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from os import PathLike

__all__ = ["packages_from_rows", "read_built_lock", "read_lock", "read_lock_records"]


def read_lock(
    path: str | PathLike[str],
    platform: str | None = None,
    *,
    environment: str | None = None,
    records: bool = False,
) -> Lock:
    """The Lock of ``path``: every platform's packages, or only ``platform``'s.

    ``environment`` picks a pixi.lock's environment (default: "default"). ``records``: parse
    with py-rattler and keep the RepoDataRecords of ``platform`` (None: this machine's), in the
    lock's order, to link. BadInput with one line when the file is missing, not a lock, lists
    no packages, has a virtual-package constraint that is not a version, lists a package twice
    for one platform (naming both records), or lacks the platform or environment (naming those
    it has).
    """
    if records:
        return read_lock_records(path, platform, environment=environment)
    path = Path(path)
    lock = _only(_parsed(path, environment), platform)
    check_packages(path, lock.packages)
    return lock


def read_lock_records(
    path: str | PathLike[str], platform: str | None = None, *, environment: str | None = None
) -> Lock:
    """``read_lock(path, platform, environment=environment, records=True)``: the Lock of
    ``platform`` (None: this machine's) as py-rattler parses it, with its RepoDataRecords in
    the lock's order, which install links."""
    from envcheck.lockfile import rattler_read

    path = Path(path)
    with private_copy(path, "lock", MAX_LOCK_BYTES) as (data, copy):  # no FIFO or device
        read = rattler_read.read_platform(str(path), data, copy, platform, environment)
    packages = packages_from_rows(read["rows"], read["platform"])
    check_packages(path, packages)
    return Lock(
        path=path,
        format=read["format"],
        platforms=read["platforms"],
        packages=packages,
        platform=read["platform"],
        sha256=read["sha256"],
        environment=read["environment"],
        records=read["records"],
    )


def read_built_lock(path: str | PathLike[str]) -> Lock:
    """``read_lock`` of a conda-lock file written by envcheck build; BadInput if not one."""
    lock = read_lock(path)
    if lock.format != "conda-lock" or not lock.recipe_hash:
        raise BadInput(f"{path} was not written by envcheck build (no recipe hash in metadata)")
    return lock


def _parsed(path: Path, environment: str | None) -> Lock:
    import yaml

    from envcheck.lockfile.condalock_read import condalock_lock
    from envcheck.lockfile.document import load_document
    from envcheck.lockfile.explicit_read import explicit_lock, is_explicit
    from envcheck.lockfile.pixi_read import is_pixi, pixi_lock

    data = read_bytes(path, "lock file", MAX_LOCK_BYTES)
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"lock file {path} is not UTF-8 text ({e.reason} at byte {e.start})") \
            from None
    kind = "conda explicit file"
    try:
        if is_explicit(text):
            return _one_environment(explicit_lock(path, text, sha256), environment)
        kind = "conda-lock file or pixi.lock"
        doc = load_document(text)
        if is_pixi(doc):
            kind = "pixi.lock"
            return pixi_lock(path, doc, sha256, environment)
        kind = "conda-lock file"
        return _one_environment(condalock_lock(path, doc, sha256), environment)
    except (RecursionError, ValueError, yaml.YAMLError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise BadInput(f"{path}: not a readable {kind} ({first})") from None


def _one_environment(lock: Lock, environment: str | None) -> Lock:
    """conda-lock and explicit files hold one environment, "default"."""
    if environment not in (None, "default"):
        raise BadInput(f"{lock.path} has no environment {environment!r} (it has default)")
    return lock


def _only(lock: Lock, platform: str | None) -> Lock:
    """``lock`` with only ``platform``'s packages; BadInput naming the platforms it has."""
    if platform is None:
        return lock
    from envcheck.record import replace

    packages = tuple(p for p in lock.packages if p.platform == platform)
    if not packages:
        has = ", ".join(sorted(lock.platforms)) or "none"
        raise BadInput(f"{lock.path} has no packages for platform {platform}; it has: {has}")
    return replace(lock, packages=packages, platform=platform)
