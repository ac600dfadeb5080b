"""A new prefix is complete or absent: it is built beside the prefix and renamed into place.

``<parent>/.<name>.envcheck-staging-<pid>`` is where the new env is linked (same directory, so
same file system: the rename is atomic). An existing prefix is swapped with it in one
``renameat2(RENAME_EXCHANGE)`` where the file system supports it; elsewhere (NFS) the old env
is renamed aside to ``.<name>.envcheck-old-<pid>`` first, and a crash between the two renames is
undone by the next install (``recover``: the old env goes back). Everything here runs under
the prefix lock, so leftovers it finds belong to installs that are gone.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
from pathlib import Path

from envcheck.errors import BadInput

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def staging_path(prefix: Path) -> Path:
    return prefix.parent / f".{prefix.name}.envcheck-staging-{os.getpid()}"


def _old_path(prefix: Path) -> Path:
    return prefix.parent / f".{prefix.name}.envcheck-old-{os.getpid()}"


def _leftovers(prefix: Path, kind: str) -> list[Path]:
    pattern = os.path.join(glob.escape(str(prefix.parent)), f".{glob.escape(prefix.name)}")
    return sorted(Path(p) for p in glob.glob(f"{pattern}.envcheck-{kind}-*"))


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a tree or a file); read-only directories inside do not stop it."""

    def retry(func, p, exc_info) -> None:  # noqa: ANN001 - shutil's onerror signature
        parent = os.path.dirname(p)
        try:
            os.chmod(parent, 0o700)
            func(p)
        except OSError:
            pass

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=retry)
    else:
        path.unlink(missing_ok=True)


def recover(prefix: Path) -> list[str]:
    """Undo what an install that died left beside ``prefix``; says what it did.

    An old env renamed aside while the prefix is missing goes back (the swap never finished);
    staging trees and old envs of finished swaps are removed.
    """
    notes = []
    olds = _leftovers(prefix, "old")
    if olds and not os.path.lexists(prefix):
        os.rename(olds[-1], prefix)
        notes.append(f"restored {prefix} from {olds[-1].name} (an install died mid-swap)")
        olds = olds[:-1]
    for p in [*olds, *_leftovers(prefix, "staging")]:
        remove_tree(p)
        notes.append(f"removed {p.name}, left by an install that did not finish")
    return notes


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False where the kernel or file system cannot."""
    import ctypes  # here: only the swap needs it

    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_in(staging: Path, prefix: Path) -> Path | None:
    """Put the complete env at ``staging`` in place of ``prefix``; returns where the old env
    now is (to be removed by the caller), or None when there was none."""
    if not os.path.lexists(prefix):
        os.rename(staging, prefix)
        return None
    if _exchange(staging, prefix):
        return staging  # the old env, under the staging name
    old = _old_path(prefix)
    os.rename(prefix, old)
    try:
        os.rename(staging, prefix)  # a crash before this line: recover() puts the old one back
    except OSError:
        os.rename(old, prefix)
        raise
    return old


def check_swappable(prefix: Path) -> None:
    """BadInput when the prefix cannot be replaced by a rename (a mount point)."""
    if prefix.is_dir() and os.path.ismount(prefix):
        raise BadInput(
            f"prefix {prefix} is a mount point: envcheck builds the env beside it and renames "
            "it into place; install into a directory inside the mount"
        )
