"""Where a new env is built and an old one set aside: a directory nobody else can plant.

- One install's work directory: ``tempfile.mkdtemp`` in the prefix's parent (same file system,
  so the renames are atomic), named ``.<name>.envcheck-staging-<random>``, mode 0700, held
  open from the start and checked by that descriptor (a directory, owned by this user, mode
  0700; opened with ``O_NOFOLLOW``). Inside it: ``record`` (the prefix it was made for), the
  new env built in ``stage``, and, where the file system has no ``RENAME_EXCHANGE`` (NFS), the
  old env set aside as ``old`` between the swap's two renames.
- Every rename and removal goes through descriptors: the parent's (opened once) and the work
  directory's, so a name swapped for a symlink later is never followed; a rename never follows
  a link at its target. Before the swap the work directory's name must still be that
  directory (another user who can rename entries in the parent could have moved it).
- Recovery (``recover``) trusts only a work directory it can prove an install of this user made
  for this prefix: a directory (not a link), owned by this user, mode 0700, holding a
  ``record`` that is a regular file of this user with one link naming this prefix. From such a
  directory an ``old`` env goes back when the prefix is missing (a swap died between its two
  renames) and the rest is removed; anything else beside the prefix is left where it is and
  said so.
- ``shared_parent``: a prefix in a directory another user can write (without the sticky bit, or
  owned by that user), or below one, is refused as root unless ``--allow-shared-parent``: such
  a user can rename what root builds there while it is built.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from envcheck.errors import BadInput

RECORD = "record"
STAGE = "stage"
OLD = "old"
RECORD_MAX = 64 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_EXCHANGE = 2


def work_prefix(prefix: Path) -> str:
    return f".{prefix.name}.envcheck-staging-"


class Work:
    """One install's work directory beside ``prefix`` (absolute), created and held open."""

    def __init__(self, prefix: Path, parent_fd: int) -> None:
        self.prefix, self.parent_fd = prefix, parent_fd
        self.path = Path(tempfile.mkdtemp(prefix=work_prefix(prefix), dir=prefix.parent))
        try:
            self.fd = os.open(self.path.name, _DIR_FLAGS, dir_fd=parent_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.rmdir(self.path.name, dir_fd=parent_fd)
            raise
        problem = _not_private(os.fstat(self.fd))
        if problem:  # not the directory mkdtemp made: left as it is
            os.close(self.fd)
            raise BadInput(f"staging directory {self.path} {problem} right after it was made")
        try:
            self._fill()
        except BaseException:
            self.remove()
            raise

    def _fill(self) -> None:
        """The record and ``stage``, in the new directory."""
        body = json.dumps({"prefix": str(self.prefix), "pid": os.getpid()}).encode()
        rec = os.open(RECORD, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=self.fd)  # fmt: skip
        try:
            os.write(rec, body)
        finally:
            os.close(rec)
        os.mkdir(STAGE, 0o777, dir_fd=self.fd)  # the env's own mode: as the umask says

    @property
    def stage(self) -> Path:
        return self.path / STAGE

    def check_in_place(self) -> None:
        """BadInput when the work directory's name no longer names it (moved by another user)."""
        try:
            now = os.lstat(self.path.name, dir_fd=self.parent_fd)
        except OSError:
            now = None
        held = os.fstat(self.fd)
        if now is None or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            raise BadInput(
                f"the staging directory {self.path} was moved while the env was built in it "
                f"(another user can rename entries in {self.prefix.parent}); nothing was swapped"
            )

    def swap_in(self) -> None:
        """Put the complete env in ``stage`` in place of the prefix, by descriptors; the old env,
        if any, ends up inside the work directory (removed with it)."""
        self.check_in_place()
        name, pfd, wfd = self.prefix.name, self.parent_fd, self.fd
        if not _lexists(name, pfd):
            os.rename(STAGE, name, src_dir_fd=wfd, dst_dir_fd=pfd)
            return
        if _exchange(wfd, STAGE, pfd, name):
            return  # the old env is now ``stage``
        os.rename(name, OLD, src_dir_fd=pfd, dst_dir_fd=wfd)
        try:
            os.rename(STAGE, name, src_dir_fd=wfd, dst_dir_fd=pfd)  # a crash before: recover()
        except OSError:
            os.rename(OLD, name, src_dir_fd=wfd, dst_dir_fd=pfd)
            raise

    def remove(self) -> None:
        """Remove the work directory and all in it; its name only while it still names it."""
        try:
            _empty(self.fd)
            held = os.fstat(self.fd)
            now = os.lstat(self.path.name, dir_fd=self.parent_fd)
            if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                os.rmdir(self.path.name, dir_fd=self.parent_fd)
        except OSError:
            pass
        finally:
            os.close(self.fd)


def _lexists(name: str, dir_fd: int) -> bool:
    try:
        os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def _empty(fd: int) -> None:
    """Remove everything in the directory ``fd`` (never following a link; read-only
    directories inside do not stop it)."""

    def retry(func, p, exc_info) -> None:  # noqa: ANN001 - shutil's onerror signature
        try:
            os.chmod(os.path.dirname(p) or ".", 0o700, dir_fd=fd)
            func(p, dir_fd=fd)
        except (OSError, TypeError, NotImplementedError):
            pass

    for entry in os.listdir(fd):
        st = os.lstat(entry, dir_fd=fd)
        if stat.S_ISDIR(st.st_mode):
            os.chmod(entry, 0o700, dir_fd=fd)
            shutil.rmtree(entry, dir_fd=fd, onerror=retry)
        else:
            os.unlink(entry, dir_fd=fd)


def _exchange(fd_a: int, a: str, fd_b: int, b: str) -> bool:
    """Atomically swap two names (relative to two directory descriptors); False where the
    kernel or file system cannot."""
    import ctypes  # here: only the swap needs it

    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    rc = fn(fd_a, os.fsencode(a), fd_b, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _not_private(st: os.stat_result) -> str | None:
    """Why ``st`` is not a directory this user made for itself (None when it is)."""
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not this user"
    if stat.S_IMODE(st.st_mode) != 0o700:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def _proof(name: str, prefix: Path, parent_fd: int) -> tuple[int | None, str]:
    """(an open descriptor of ``name``, "") when it is a work directory this user made for
    ``prefix``; (None, why not) otherwise."""
    try:
        fd = os.open(name, _DIR_FLAGS | os.O_NONBLOCK, dir_fd=parent_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            link = stat.S_ISLNK(os.lstat(name, dir_fd=parent_fd).st_mode)
            kind = "a symlink" if link else "not a directory"
            return None, f"{kind}, not a directory this user's install made"
        return None, f"cannot be opened ({e.strerror})"
    try:
        why = _not_private(os.fstat(fd)) or _record_problem(fd, prefix)
    except BaseException:
        os.close(fd)
        raise
    if why:
        os.close(fd)
        return None, why
    return fd, ""


def _record_problem(fd: int, prefix: Path) -> str | None:
    try:
        rec = os.open(RECORD, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                      dir_fd=fd)  # fmt: skip
    except OSError as e:
        return f"has no record of the install that made it ({e.strerror})"
    try:
        st = os.fstat(rec)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            return "has a record that is not a regular file of this user with one link"
        body = os.read(rec, RECORD_MAX)
    finally:
        os.close(rec)
    try:
        named = json.loads(body).get("prefix")
    except (ValueError, AttributeError):
        return "has an unreadable record"
    if named != str(prefix):
        return "was made for another prefix"
    return None


def leftovers(prefix: Path, parent_fd: int) -> list[str]:
    """Names beside ``prefix`` that an install's work directory could have (old and new
    spellings), its lock file not among them."""
    start = f".{prefix.name}.envcheck-"
    return sorted(
        n for n in os.listdir(parent_fd) if n.startswith(start) and not n.endswith("-lock")
    )


def recover(prefix: Path, parent_fd: int) -> list[str]:
    """Undo what an install of this user that died left beside ``prefix``; says what it did
    and what it left alone."""
    notes = []
    for name in leftovers(prefix, parent_fd):
        fd, why = _proof(name, prefix, parent_fd)
        if fd is None:
            notes.append(f"left {name} beside {prefix} alone: {why}")
            continue
        try:
            if _lexists(OLD, fd) and not _lexists(prefix.name, parent_fd):
                os.rename(OLD, prefix.name, src_dir_fd=fd, dst_dir_fd=parent_fd)
                notes.append(f"restored {prefix} from {name} (an install died mid-swap)")
            _empty(fd)
            os.rmdir(name, dir_fd=parent_fd)
            notes.append(f"removed {name}, left by an install that did not finish")
        finally:
            os.close(fd)
    return notes


def _writable_by_others(st: os.stat_result) -> str | None:
    if st.st_uid not in (0, os.geteuid()):
        return f"is owned by uid {st.st_uid}"
    if st.st_mode & stat.S_ISVTX:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_IWOTH:
        return f"is writable by every user without the sticky bit (mode {mode:04o})"
    if mode & stat.S_IWGRP and st.st_gid != 0:
        return f"is writable by group {st.st_gid} without the sticky bit (mode {mode:04o})"
    return None


def shared_parent(prefix: Path) -> str | None:
    """Why another user could rename what is built beside ``prefix`` (None when no one can):
    the first existing directory above it, or any directory above that, is owned by another
    user, or is writable by others without the sticky bit."""
    d = prefix.parent
    while not os.path.isdir(d) and d != d.parent:
        d = d.parent
    d = Path(os.path.realpath(d))
    for p in (d, *d.parents):
        try:
            why = _writable_by_others(os.stat(p))
        except OSError:
            continue
        if why:
            return f"{p} {why}"
    return None
