"""Reading files a user names (--facts, --scheduler-file, --lock, recipes, TLS PEMs, ...):
bounded in size, nesting and time, and refused in one line when they are not what they claim.

``open_input`` is the one way such a path is opened. A FIFO or a device named as an input
would block the reader forever (/dev/zero, or a FIFO nobody writes) or grow it without end,
and a file of the kernel's trees is an interface, not data (/proc/kmsg looks regular and, as
root, a read of it waits for the kernel and consumes its log): only regular files outside
/proc, /sys and /dev are read, judged by name and again by the opened descriptor, unless the
caller allows a FIFO, which is then read against a deadline. JSON is checked for depth before
the parser sees it (json.loads recurses once per level and dies with a RecursionError around
1,000).
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
    from typing import Any, Callable, Iterator, Union
    PathLike = Union[str, Path]

MiB = 1 << 20
# a 20,000-package conda-lock file is about 30 MiB: past this it is not a lock
MAX_LOCK_BYTES = 512 << 20
# a local channel's repodata.json: conda-forge's linux-64 is about 300 MiB
MAX_REPODATA_BYTES = 2048 << 20
MAX_DEPTH = 64  # JSON nesting: facts are 4 levels deep, a report 5
# the kernel's trees: a file there is an interface, not data. /proc/kmsg is "regular" with
# size 0, and a read of it waits for the kernel to log and consumes what it returns
SYSTEM_TREES = ("/proc", "/sys", "/dev")
READ_DEADLINE_S = 60.0  # a regular file that takes longer is on a mount that hangs

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


def system_tree(path: PathLike) -> str:
    """The kernel tree (/proc, /sys, /dev) ``path`` resolves into, or "" (links followed)."""
    real = os.path.realpath(path)
    return next((t for t in SYSTEM_TREES if real == t or real.startswith(t + "/")), "")


def _system_devices() -> dict[int, str]:
    devices = {}
    for tree in SYSTEM_TREES:
        try:
            devices[os.stat(tree).st_dev] = tree
        except OSError:
            continue
    return devices


def _pipe_alias(path: PathLike) -> bool:
    """``path`` names a descriptor's pipe (/dev/fd/63 of ``<(...)``, /dev/stdin of ``|``)."""
    return re.match(r"/proc/\d+/fd/pipe:", os.path.realpath(path)) is not None


def open_input(path: PathLike, what: str, *, fifo: bool = False, follow: bool = True,
               device: Callable[[os.stat_result], bool] | None = None,
               subject: str = "") -> int:
    """A descriptor, opened O_NONBLOCK, of the regular file ``path`` names: the one way a path
    a user names is opened for reading. Refused in one BadInput line naming ``what``, the path
    and what it is, before a byte is read: a path resolving into /proc, /sys or /dev (by name,
    then by the descriptor's device: a bind mount of them), a directory, FIFO, device or
    socket; with ``follow=False`` a symbolic link. ``fifo``: a FIFO or a pipe (``<(...)``) is
    also accepted; ``device``: a character device it accepts (``--kernel-log /dev/kmsg``);
    ``subject``: what the message starts with instead of ``what`` and the path."""
    subject = subject or f"{what} {path}"
    tree = system_tree(path)
    if tree and _pipe_alias(path) and not fifo:
        raise BadInput(f"{subject} is a pipe, not a regular file")
    if tree and not (fifo and _pipe_alias(path)) and not (device and _accepts(path, device)):
        real = os.path.realpath(path)
        where = f"resolves to {real}, under {tree}" if real != os.path.abspath(path) \
            else f"is under {tree}"
        raise BadInput(f"{subject} {where}: a kernel interface, not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        # O_NONBLOCK: opening a FIFO without a writer must not block before we can judge it
        fd = os.open(str(path), flags | (0 if follow else os.O_NOFOLLOW))
    except OSError as e:
        if not follow and e.errno == errno.ELOOP and os.path.islink(path):
            raise BadInput(f"{subject} is a symbolic link: give the file itself") from None
        raise BadInput(f"{subject} {describe_oserror(e)}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISCHR(st.st_mode) and device is not None and device(st):
            return fd
        if st.st_dev in _system_devices():
            raise BadInput(f"{subject} is on the {_system_devices()[st.st_dev]} file "
                           f"system: a kernel interface, not a regular file")
        if not (stat.S_ISREG(st.st_mode) or (fifo and stat.S_ISFIFO(st.st_mode))):
            raise BadInput(f"{subject} is {kind(st.st_mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _accepts(path: PathLike, device: Callable[[os.stat_result], bool]) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and device(st)


def read_bytes(path: PathLike, what: str, max_bytes: int, *, fifo_timeout: float = 0.0,
               follow: bool = True, deadline_s: float = READ_DEADLINE_S) -> bytes:
    """The content of `path`, at most `max_bytes`, opened by ``open_input``; BadInput naming
    `what` and the path when it is refused there, too large, not read within ``deadline_s``
    or (a FIFO, with fifo_timeout > 0) not finished within fifo_timeout seconds."""
    fd = open_input(path, what, fifo=fifo_timeout > 0, follow=follow)
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            return _read_fifo(fd, path, what, max_bytes, fifo_timeout)
        return _read_regular(fd, path, what, max_bytes, deadline_s)
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


def check_regular(path: PathLike, what: str, max_bytes: int, *,
                  device: Callable[[os.stat_result], bool] | None = None) -> None:
    """open_input's refusals and the size cap, without the read: for files another reader
    streams (``device``: as open_input's)."""
    fd = open_input(path, what, device=device)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
        raise _too_big(path, what, max_bytes)


def _too_big(path: PathLike, what: str, max_bytes: int) -> BadInput:
    return BadInput(f"{what} {path} is larger than the {_size(max_bytes)} limit")


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // 1024} KiB"


def _read_regular(fd: int, path: PathLike, what: str, max_bytes: int,
                  deadline_s: float) -> bytes:
    if os.fstat(fd).st_size > max_bytes:
        raise _too_big(path, what, max_bytes)
    chunks, size = [], 0
    deadline = time.monotonic() + deadline_s
    try:
        while size <= max_bytes:  # the file may grow after the stat: read at most max_bytes+1
            if time.monotonic() > deadline:  # a file on a mount that hangs, a trickle
                raise BadInput(f"{what} {path} was not read within {deadline_s:g} s")
            # still O_NONBLOCK: a file whose read would wait (a kernel interface elsewhere)
            # raises BlockingIOError instead of blocking
            chunk = os.read(fd, min(MiB, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except BlockingIOError:
        raise BadInput(f"{what} {path} would wait for data to be read: not a regular file's "
                       f"content") from None
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
