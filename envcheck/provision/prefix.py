"""The target prefix: one install at a time holds it, the new env is built beside it and put in
its place whole, and a stamp in it names the lock it was made from.

- The lock: an exclusive ``flock`` on ``<parent>/.<name>.envcheck-lock`` (``hold``). It is not
  inside the prefix: the prefix is renamed into place, so a lock inside it would be swapped away
  with it. The file stays after the install (removing a lock file others may be waiting on would
  let two writers in); it holds the pid of the last holder, which a waiting install names. The
  cache has one too (``CACHE/.envcheck-cache-lock``), taken with the same ``hold``.
- Staging (staging.py): the new env is built in a ``mkdtemp`` directory beside the prefix
  (same file system, so the swap is atomic; a name nobody can guess, mode 0700, checked by its
  descriptor) and swapped into place in one ``renameat2(RENAME_EXCHANGE)`` where the file
  system supports it; elsewhere (NFS) the old env is renamed into that directory first, and a
  crash between the two renames is undone by the next install, which restores only what it
  can prove an install of this user made for this prefix. Everything here runs under the
  prefix lock, so leftovers it finds belong to installs that are gone.
- Root refuses a prefix in or below a directory another user can write (no sticky bit, or
  theirs) unless ``--allow-shared-parent``: such a user could rename what is built there.
- The stamp, ``conda-meta/envcheck-install.json``: the lock (path and sha256) and platform the
  env was made from. An install whose stamp matches its lock does nothing (unless forced).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck import interrupts
from envcheck.errors import BadInput, EnvcheckError
from envcheck.provision import staging
from envcheck.provision.fetch import DiskFull
from envcheck.provision.plan import Plan
from envcheck.version import __version__

POLL_S = 0.1  # a waiting install retries this often (and stays interruptible)
STAMP = "envcheck-install.json"  # under <prefix>/conda-meta/


def resolved(prefix: Path) -> Path:
    """The prefix as an absolute path; a symlink to an env (this user's or root's) stands for
    the env it names. BadInput for a symlink of another user: envcheck does not follow it."""
    prefix = prefix.absolute()
    if not prefix.is_symlink():
        return prefix
    owner = prefix.lstat().st_uid
    if owner not in (0, os.geteuid()):
        raise BadInput(
            f"prefix {prefix} is a symlink owned by uid {owner}, not by this user: envcheck "
            "does not install through another user's link; remove it or name the real directory"
        )
    return Path(os.path.realpath(prefix))


def check_parent(prefix: Path, allow_shared: bool) -> None:
    """BadInput, as root, when another user can rename what is built beside ``prefix``
    (staging.shared_parent) and ``allow_shared`` is off."""
    if allow_shared or os.geteuid() != 0:
        return
    why = staging.shared_parent(prefix)
    if why:
        raise BadInput(
            f"refusing to install {prefix} as root: {why}, so another user could swap what "
            "is built there for a link; pass --allow-shared-parent to install there anyway"
        )


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
    prefix: Path, plan: Plan, force: bool, timeout: float, say: Callable[[str], None],
    allow_shared_parent: bool = False,
) -> Iterator[bool]:
    """Hold ``prefix`` (absolute) for the block: checked writable (and, as root, not in a
    directory others can write unless allowed), its lock taken, what a dead install of this
    user left beside it undone (said). Yields whether it must be built: False when its stamp
    matches ``plan`` and ``force`` is off."""
    check_writable(prefix)
    check_parent(prefix, allow_shared_parent)
    with hold(lock_path(prefix), f"prefix {prefix}", timeout, say):
        parent_fd = os.open(prefix.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            notes = staging.recover(prefix, parent_fd)
        finally:
            os.close(parent_fd)
        for note in notes:
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
        fd = _open_lock(path, say)
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


def _open_lock(path: Path, say: Callable[[str], None]) -> int:
    """The lock file, opened without following a link: a symlink, a file with other links or
    anything not a regular file at its name (none of which an install makes) is removed and
    a new file made in its place (said)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _ in range(3):
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EWOULDBLOCK):
                raise
            fd = -1
        if fd >= 0:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                return fd
            os.close(fd)
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, "a directory is in the way of the lock file", str(path))
        what = (
            "a symlink" if stat.S_ISLNK(st.st_mode)
            else f"a file with {st.st_nlink} links" if stat.S_ISREG(st.st_mode)
            else "not a regular file"
        )  # fmt: skip
        os.unlink(path)
        say(f"envcheck: replaced {path}: it was {what}, not a lock file an install makes")
    raise OSError(errno.EAGAIN, "the lock file kept being replaced", str(path))


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


@contextmanager
def staged(prefix: Path, plan: Plan) -> Iterator[Path]:
    """The staging path for the block to build the new env in (inside this install's own work
    directory, staging.py). When the block completes, the stamp is written into it, signals are
    held (the install finishes from here), it is swapped into place and the old env removed; on
    any failure or signal in the block the work directory is removed: the prefix is as it was."""
    parent_fd = os.open(prefix.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        work = staging.Work(prefix, parent_fd)
        try:
            yield work.stage
            write_stamp(work.stage, plan)
            interrupts.commit()
            work.swap_in()
        finally:
            work.remove()  # the old env, or the unfinished new one
    finally:
        os.close(parent_fd)


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
