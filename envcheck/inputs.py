"""Reading files a user names (--facts, --scheduler-file, --lock, recipes, TLS PEMs, ...):
bounded in size, nesting and time, and refused in one line when they are not what they claim.

A FIFO or a device named as an input would block the reader forever (/dev/zero, or a FIFO
nobody writes) or grow it without end: only regular files are read unless the caller allows a
FIFO, which is then read against a deadline. JSON is checked for depth before the parser sees
it (json.loads recurses once per level and dies with a RecursionError around 1,000).
Python 3.8: the verify side imports this.
"""

from __future__ import annotations

import errno
import os
import re
import select
import stat
import time
from contextlib import contextmanager
from pathlib import Path

from envcheck.errors import BadInput

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Iterator, Union
    PathLike = Union[str, Path]

MiB = 1 << 20
# a 20,000-package conda-lock file is about 30 MiB: past this it is not a lock
MAX_LOCK_BYTES = 512 << 20
MAX_DEPTH = 64  # JSON nesting: facts are 4 levels deep, a report 5

_KINDS = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


def kind(mode: int) -> str:
    """'a directory', 'a FIFO', ... for a st_mode that is not a regular file's (the readers here
    and the writers in destinations.py name what they refuse with it)."""
    return next((name for test, name in _KINDS if test(mode)), "a file of another kind")


def describe_oserror(e: OSError) -> str:
    """One phrase for why a path could not be opened ('a symlink loop', not the errno text)."""
    if e.errno == errno.ENOENT:
        return "does not exist"
    if e.errno == errno.ELOOP:
        return "is a symlink loop"
    if e.errno == errno.EACCES:
        return "cannot be read (permission denied)"
    return f"cannot be read ({e.strerror or e})"


def read_bytes(path: PathLike, what: str, max_bytes: int, *, fifo_timeout: float = 0.0) -> bytes:
    """The content of `path`, at most `max_bytes`; BadInput naming `what` and the path when it
    is missing, a loop, a directory or device, too large, or (a FIFO, with fifo_timeout > 0)
    not finished within fifo_timeout seconds."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer must not block before we can judge it
        fd = os.open(str(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BadInput(f"{what} {path} {describe_oserror(e)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) and fifo_timeout > 0:
            return _read_fifo(fd, path, what, max_bytes, fifo_timeout)
        if not stat.S_ISREG(mode):
            raise BadInput(f"{what} {path} is {kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return _read_regular(fd, path, what, max_bytes)
    finally:
        os.close(fd)


@contextmanager
def private_copy(path: PathLike, what: str, max_bytes: int) -> Iterator[tuple[bytes, str]]:
    """(the bytes ``read_bytes`` reads, a path to a copy of them only this process reaches),
    for a library that parses by path: what it parses is what was read and hashed, however
    the file changes meanwhile. The copy is a memfd; where the system has none, the path is
    the file's own."""
    data = read_bytes(path, what, max_bytes)
    memfd = getattr(os, "memfd_create", None)
    if memfd is None:
        yield data, str(path)
        return
    fd = memfd("envcheck-" + what.replace(" ", "-"), os.MFD_CLOEXEC)
    try:
        with open(fd, "wb", closefd=False) as f:  # writes every byte (os.write may not)
            f.write(data)
        yield data, f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def check_regular(path: PathLike, what: str, max_bytes: int) -> None:
    """read_bytes' refusals without the read: for files another reader streams."""
    try:
        fd = os.open(str(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BadInput(f"{what} {path} {describe_oserror(e)}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{what} {path} is {kind(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        raise _too_big(path, what, max_bytes)


def _too_big(path: PathLike, what: str, max_bytes: int) -> BadInput:
    return BadInput(f"{what} {path} is larger than the {_size(max_bytes)} limit")


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // 1024} KiB"


def _read_regular(fd: int, path: PathLike, what: str, max_bytes: int) -> bytes:
    if os.fstat(fd).st_size > max_bytes:
        raise _too_big(path, what, max_bytes)
    chunks, size = [], 0
    try:
        while size <= max_bytes:  # the file may grow after the stat: read at most max_bytes+1
            chunk = os.read(fd, min(MiB, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise BadInput(f"{what} {path} cannot be read ({e.strerror or e})") from None
    if size > max_bytes:
        raise _too_big(path, what, max_bytes)
    return b"".join(chunks)


def _read_fifo(fd: int, path: PathLike, what: str, max_bytes: int, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BadInput(f"{what} {path} is a FIFO that did not finish within {timeout:g} s")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            if size:  # the writer closed: done
                return b"".join(chunks)
            time.sleep(0.05)  # no writer yet: EOF until one opens it
            continue
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise _too_big(path, what, max_bytes)


def read_text(path: PathLike, what: str, max_bytes: int, *, fifo_timeout: float = 0.0) -> str:
    """read_bytes, decoded as UTF-8 (BadInput when it is not)."""
    data = read_bytes(path, what, max_bytes, fifo_timeout=fifo_timeout)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{what} {path} is not UTF-8 text ({e.reason} at byte {e.start})") \
            from None


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """How deeply `text`'s arrays and objects nest (brackets inside strings do not count)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads_json(text: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads, with nesting beyond max_depth and malformed text as one BadInput line."""
    import json

    if json_depth(text) > max_depth:
        raise BadInput(f"{what}: JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadInput(f"{what}: not JSON ({e})") from None


def load_json_file(path: PathLike, what: str, max_bytes: int, *,
                   fifo_timeout: float = 0.0, max_depth: int = MAX_DEPTH) -> Any:
    """A JSON file a user named: read_text's bounds, then loads_json's."""
    text = read_text(path, what, max_bytes, fifo_timeout=fifo_timeout)
    return loads_json(text, f"{what} {path}", max_depth)
