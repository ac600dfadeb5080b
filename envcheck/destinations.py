"""Every path envcheck writes is a regular file or absent; anything else is refused first.

As root, replacing a device node with a regular file is one ``os.replace`` away (a recipe
written "to" a copy of /dev/null), and writing into a FIFO blocks until a reader comes. Every
writer (report files, locks, recipes) asks ``check_destination`` before any work and writes
through ``write_file`` or ``envcheck.atomic``, which ask again at the moment of writing.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.fds import write_all
from envcheck.inputs import kind

# a report file named so goes to standard output (`--json - | jq`)
STDOUT_NAMES = frozenset({"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
_claimed: list[int] = []  # the real standard output while `claim_stdout` holds it


def is_stdout(path: Path | str | None) -> bool:
    return path is not None and str(path) in STDOUT_NAMES


@contextmanager
def claim_stdout(claim: bool) -> Iterator[None]:
    """While held (``claim``: a report goes to stdout), descriptor 1 is stderr, for this
    process and every child it starts: the table, progress and a child's chatter go there,
    and ``write_file`` writes a report named ``-`` to the real standard output alone."""
    if not claim:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    _claimed.append(saved)
    try:
        yield
    finally:
        sys.stdout.flush()
        _claimed.remove(saved)
        os.dup2(saved, 1)
        os.close(saved)


def check_destination(path: Path, what: str, *, replace: bool = False) -> None:
    """BadInput (one line) unless ``path`` is absent in a writable directory or a writable
    regular file (a symbolic link is judged by what it points at). ``what`` names the path in
    the message, e.g. ``--json out.json``. ``replace``: the file is renamed over, not written
    into, so its own permission bits do not matter. Standard output (``STDOUT_NAMES``) is
    accepted: ``check_stdout`` judges it."""
    if is_stdout(path):
        return
    try:
        st = os.stat(path)
    except FileNotFoundError:
        target = Path(os.path.realpath(path))  # a dangling link is written through
        parent = target.parent if os.path.islink(path) else path.parent
        parent = parent if str(parent) else Path(".")
        if not parent.is_dir():
            raise BadInput(f"{what}: directory {parent} does not exist") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise BadInput(f"{what}: directory {parent} is not writable") from None
        return
    except OSError as e:
        raise BadInput(f"{what}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        link = f" (through a symbolic link to {os.readlink(path)})" if os.path.islink(path) else ""
        raise BadInput(f"{what} is {kind(st.st_mode)}{link}: envcheck writes only regular files")
    if not replace and not os.access(path, os.W_OK):
        raise BadInput(f"{what} is not writable")


def check_destinations(named: Iterable[tuple[str, Path | None]]) -> None:
    """``check_destination`` for each (what, path) given, and no path twice."""
    seen: dict[str, str] = {}
    for what, path in named:
        if path is None:
            continue
        check_destination(path, what)
        key = _identity(path)
        if key in seen:
            raise BadInput(f"{seen[key]} and {what} name the same file: give each its own")
        seen[key] = what


def _identity(path: Path) -> str:
    if is_stdout(path):
        return "standard output"
    try:
        return os.path.realpath(path)
    except OSError:
        return os.path.abspath(path)


def check_stdout() -> None:
    """BadInput when standard output refuses writes (a closed descriptor, /dev/full)."""
    try:
        fd = sys.stdout.fileno()
        os.write(fd, b"")  # reaches the device's write path without writing anything
    except (OSError, ValueError, AttributeError) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise BadInput(f"standard output cannot be written: {e.strerror}") from None


def write_file(path: Path, data: bytes, what: str | None = None) -> None:
    """Write ``data`` to ``path``, a regular file or absent, checked again as it is opened.

    The check before the work can be raced (a FIFO or a device put there since): the file is
    opened without blocking and without truncating, and truncated only once its descriptor is
    known to be a regular file.
    """
    what = what or str(path)
    if is_stdout(path):
        sys.stdout.flush()  # what Python holds for descriptor 1 goes before the report
        try:
            write_all(_claimed[-1] if _claimed else sys.stdout.fileno(), data)
        except OSError as e:
            raise BadInput(f"{what}: standard output: {e.strerror or e}") from None
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        raise BadInput(f"{what}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{what} is {kind(st.st_mode)}: envcheck writes only regular files")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        write_all(fd, data)
    except OSError as e:
        raise BadInput(f"{what}: {e.strerror or e}") from None
    finally:
        os.close(fd)
