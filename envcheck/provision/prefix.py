"""The target prefix: one install at a time holds it, the new env is built beside it and put in
its place whole, and a stamp in it names the lock it was made from.

- The lock: an exclusive ``flock`` on ``<parent>/.<name>.envcheck-lock`` (``hold``). It is not
  inside the prefix: the prefix is renamed into place, so a lock inside it would be swapped away
  with it. The file stays after the install (removing a lock file others may be waiting on would
  let two writers in); it holds the pid of the last holder, which a waiting install names. The
  cache has one too (``CACHE/.envcheck-cache-lock``), taken with the same ``hold``.
- Staging: the new env is linked in ``<parent>/.<name>.envcheck-staging-<pid>`` (same directory,
  so same file system: the rename is atomic). An existing prefix is swapped with it in one
  ``renameat2(RENAME_EXCHANGE)`` where the file system supports it; elsewhere (NFS) the old env
  is renamed aside to ``.<name>.envcheck-old-<pid>`` first, and a crash between the two renames
  is undone by the next install (``recover``: the old env goes back). Everything here runs under
  the prefix lock, so leftovers it finds belong to installs that are gone.
- The stamp, ``conda-meta/envcheck-install.json``: the lock (path and sha256) and platform the
  env was made from. An install whose stamp matches its lock does nothing (unless forced).
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck import interrupts
from envcheck.errors import BadInput, EnvcheckError
from envcheck.provision.fetch import DiskFull
from envcheck.provision.plan import Plan
from envcheck.version import __version__

POLL_S = 0.1  # a waiting install retries this often (and stays interruptible)
STAMP = "envcheck-install.json"  # under <prefix>/conda-meta/
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def resolved(prefix: Path) -> Path:
    """The prefix as an absolute path; a symlink to an env stands for the env it names."""
    prefix = prefix.absolute()
    return Path(os.path.realpath(prefix)) if prefix.is_symlink() else prefix


def check_writable(prefix: Path) -> None:
    """BadInput when ``prefix`` cannot be built beside and renamed into place: its parent (or
    the nearest ancestor that exists) must be a writable directory; an existing prefix must be
    a conda env (or empty) and not a mount point."""
    p = prefix.parent
    while not p.exists():
        if p.is_symlink():  # a dangling link
            raise BadInput(f"cannot create prefix {prefix}: {p} is a broken symlink")
        p = p.parent
    if not p.is_dir():
        raise BadInput(f"cannot create prefix {prefix}: {p} is not a directory")
    if os.path.lexists(prefix):
        if not prefix.is_dir():
            raise BadInput(f"prefix {prefix} exists and is not a directory")
        if any(prefix.iterdir()) and not (prefix / "conda-meta").is_dir():
            raise BadInput(f"prefix {prefix} exists and is not a conda environment (no conda-meta)")
        if os.path.ismount(prefix):
            raise BadInput(
                f"prefix {prefix} is a mount point: envcheck builds the env beside it and renames "
                "it into place; install into a directory inside the mount"
            )
    if not os.access(p, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write prefix {prefix}: {p} is not writable")
    try:  # root passes os.access everywhere; a read-only filesystem still refuses
        probe = p / f".envcheck-probe-{os.getpid()}-{time.monotonic_ns()}"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"cannot write prefix {prefix}: {e.strerror} ({p})") from None


@contextmanager
def claimed(
    prefix: Path, plan: Plan, force: bool, timeout: float, say: Callable[[str], None]
) -> Iterator[bool]:
    """Hold ``prefix`` (absolute) for the block: checked writable, its lock taken, what a dead
    install left beside it undone (said). Yields whether it must be built: False when its stamp
    matches ``plan`` and ``force`` is off."""
    check_writable(prefix)
    with hold(lock_path(prefix), f"prefix {prefix}", timeout, say):
        for note in recover(prefix):
            say(f"envcheck: {note}")
        yield force or not is_current(prefix, plan)


def lock_path(prefix: Path) -> Path:
    return prefix.parent / f".{prefix.name}.envcheck-lock"


def cache_lock_path(cache: Path) -> Path:
    return cache / ".envcheck-cache-lock"


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "another process"


@contextmanager
def hold(path: Path, what: str, timeout: float, say: Callable[[str], None]) -> Iterator[int]:
    """Hold the lock file ``path`` (guarding ``what``: "prefix /opt/env") for the block.

    Another holder: wait up to ``timeout`` seconds (saying so once), then BadInput naming its
    pid; ``timeout`` <= 0 fails at once. Yields the lock file's descriptor.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise BadInput(f"cannot lock {what}: {e.strerror} ({path})") from None
    try:
        if not _try(fd):
            _wait(fd, what, path, timeout, say)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _wait(fd: int, what: str, path: Path, timeout: float, say: Callable[[str], None]) -> None:
    holder = _holder(fd)
    if timeout <= 0:
        raise BadInput(
            f"{what} is in use by {holder}, another envcheck install (lock {path}); "
            "wait for it or pass --lock-timeout SECONDS"
        )
    say(f"envcheck: {what} is in use by {holder}, another install: waiting up to {timeout:g} s")
    deadline = time.monotonic() + timeout
    while not _try(fd):
        if time.monotonic() >= deadline:
            raise BadInput(
                f"{what} is still in use by {_holder(fd)}, another envcheck install, after "
                f"{timeout:g} s (lock {path}); raise --lock-timeout or wait for it"
            )
        time.sleep(POLL_S)


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


@contextmanager
def staged(prefix: Path, plan: Plan) -> Iterator[Path]:
    """The staging path for the block to build the new env in. When the block completes, the
    stamp is written into it, signals are held (the install finishes from here), it is swapped
    into place and the old env removed; on any failure or signal in the block the staging tree
    is removed: the prefix is as it was."""
    stage = staging_path(prefix)
    try:
        yield stage
        write_stamp(stage, plan)
        interrupts.commit()
        old = swap_in(stage, prefix)
    except BaseException:
        remove_tree(stage)
        raise
    if old is not None:
        remove_tree(old)


@contextmanager
def one_line_errors(prefix: Path) -> Iterator[None]:
    """OSErrors and py-rattler's errors in the block as one-line EnvcheckErrors naming
    ``prefix`` (disk full named so)."""
    try:
        yield
    except (EnvcheckError, KeyboardInterrupt, SystemExit):
        raise
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            where = e.filename or prefix
            raise DiskFull(f"disk full writing {where}: {e.strerror}") from None
        raise BadInput(f"cannot write prefix {prefix}: {e}") from None
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EnvcheckError(f"installing into {prefix} failed: {first}", detail=str(e)) from None


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


def read_stamp(prefix: Path) -> dict | None:
    try:
        return json.loads((prefix / "conda-meta" / STAMP).read_text())
    except (OSError, ValueError):
        return None


def is_current(prefix: Path, plan: Plan) -> bool:
    stamp = read_stamp(prefix)
    return bool(
        stamp
        and stamp.get("lock_sha256") == plan.lock_sha256
        and stamp.get("platform") == plan.platform
    )


def write_stamp(prefix: Path, plan: Plan) -> None:
    body = {
        "lock": str(plan.lock.resolve()),
        "lock_sha256": plan.lock_sha256,
        "platform": plan.platform,
        "conda_packages": len(plan.conda),
        "pip_packages": len(plan.pip),
        "envcheck": __version__,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = prefix / "conda-meta" / STAMP
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)
