"""The one way envcheck writes a path a user names (--json, --junit, --out, --save-facts,
locks, recipes): a new file in the target's directory, created with O_EXCL under an
unpredictable name, written whole and renamed over the target.

Nothing is written through a link: a rename replaces the name, so a hard link another user
planted keeps its own content, and a symbolic link on the way to the target (the target's own
or a directory's) is followed only when it belongs to the caller or to root; one another user
owns is refused, as is a target that resolves into /proc, /sys or /dev or is not a regular
file (a device node: replacing it is one ``os.replace`` away as root; a FIFO). Every writer
asks ``check_destination`` before any work (a bad ``--json`` is refused before the run) and
writes through ``write_file`` or ``envcheck.atomic``, which ask again at the moment of
writing.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.fds import write_all
from envcheck.inputs import kind, system_tree

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
    """BadInput (one line) unless ``destination`` accepts ``path``."""
    destination(path, what, replace=replace)


def destination(path: Path, what: str, *, replace: bool = False) -> Path:
    """The file a write to ``path`` replaces, its links resolved (``resolve_owned``); BadInput
    (one line) unless it is absent in a writable directory or a writable regular file outside
    /proc, /sys and /dev. ``what`` names the path in the message, e.g. ``--json out.json``.
    ``replace``: the file is renamed over, so its own permission bits do not matter. Standard
    output (``STDOUT_NAMES``) is accepted as it is: ``check_stdout`` judges it."""
    if is_stdout(path):
        return Path(path)
    target = resolve_owned(Path(path), what)
    tree = system_tree(target)
    if tree:
        where = f"resolves to {target}, under" if target != Path(os.path.abspath(path)) \
            else "is under"
        raise BadInput(f"{what} {where} {tree}: envcheck writes only regular files")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        parent = target.parent
        if not parent.is_dir():
            raise BadInput(f"{what}: directory {parent} does not exist") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise BadInput(f"{what}: directory {parent} is not writable") from None
        return target
    except OSError as e:
        raise BadInput(f"{what}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        link = f" (through a symbolic link to {os.readlink(path)})" if os.path.islink(path) else ""
        raise BadInput(f"{what} is {kind(st.st_mode)}{link}: envcheck writes only regular files")
    if not replace and not os.access(target, os.W_OK):
        raise BadInput(f"{what} is not writable")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise BadInput(f"{what}: directory {target.parent} is not writable (the file is "
                       f"replaced, never written in place)")
    return target


def resolve_owned(path: Path, what: str, _depth: int = 0) -> Path:
    """``path`` absolute with every symbolic link on it resolved, each one checked: BadInput
    when one belongs to a uid other than the caller's and root's (planted by another user:
    following it would write where that user chose, with the caller's rights)."""
    parts = Path(os.path.abspath(path)).parts
    at = Path(parts[0])
    for i, name in enumerate(parts[1:], start=2):
        step = at / name
        try:
            st = os.lstat(step)
        except (FileNotFoundError, NotADirectoryError):
            return step.joinpath(*parts[i:])
        except OSError as e:
            raise BadInput(f"{what}: {step}: {e.strerror or e}") from None
        if not stat.S_ISLNK(st.st_mode):
            at = step
            continue
        if st.st_uid not in (os.geteuid(), 0):
            raise BadInput(f"{what}: {step} is a symbolic link of uid {st.st_uid}, another "
                           f"user's: envcheck does not write through it")
        if _depth > 40:
            raise BadInput(f"{what}: {step} is a symbolic link loop")
        at = resolve_owned(at / os.readlink(step), what, _depth + 1)
    return at


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
    """Write ``data`` to ``path`` (``destination``, asked again now): a new file beside the
    target, renamed over it; standard output when ``path`` names it."""
    what = what or str(path)
    if is_stdout(path):
        sys.stdout.flush()  # what Python holds for descriptor 1 goes before the report
        try:
            write_all(_claimed[-1] if _claimed else sys.stdout.fileno(), data)
        except OSError as e:
            raise BadInput(f"{what}: standard output: {e.strerror or e}") from None
        return
    target = destination(path, what, replace=True)
    tmp = write_temp(target, data, what)
    try:
        destination(path, what, replace=True)  # what may have been put there meanwhile
        os.replace(tmp, target)
    except OSError as e:
        raise BadInput(f"{what}: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_temp(target: Path, data: bytes, what: str) -> str:
    """A new file holding ``data``, flushed to disk, in ``target``'s directory: created with
    O_EXCL under an unpredictable name (``mkstemp``: nothing planted is opened), with the
    mode ``target`` has, or a new file's (0666 less the umask). Its path, to rename over
    ``target``."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise BadInput(f"cannot write {what}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode(target))
    except OSError as e:  # a write error has no file name of its own: name the target
        os.unlink(tmp)
        raise BadInput(f"cannot write {what}: {e.strerror or e}") from None
    return tmp


def _mode(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask
