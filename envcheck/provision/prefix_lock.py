"""One writer per prefix: an exclusive ``flock`` on a lock file beside the prefix.

The cache has one too (``CACHE/.envcheck-cache-lock``): the unpacked packages are checked,
linked from and re-stamped by one install at a time.

The lock file is ``<parent>/.<name>.envcheck-lock``, not inside the prefix: the prefix itself is
built beside it and renamed into place, so a lock inside it would be swapped away with it. The
file stays after the install (removing a lock file others may be waiting on would let two
writers in); it holds the pid of the last holder, which a waiting install names.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck.errors import BadInput

POLL_S = 0.1  # a waiting install retries this often (and stays interruptible)


def lock_path(prefix: Path) -> Path:
    return prefix.parent / f".{prefix.name}.envcheck-lock"


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


def cache_lock_path(cache: Path) -> Path:
    return cache / ".envcheck-cache-lock"


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
