"""What is linked is what was verified: the unpacked packages py-rattler links from are checked.

envcheck unpacks each checked archive itself (in the linker child) into py-rattler's package
cache, ``CACHE/pkgs/<name>-<version>-<build>/``; the unpacker hashes the bytes it reads, and
they must be the checked archive's. It then records, in ``CACHE/verified/<folder>.json``, the
sha256 of every file (from the package's paths.json, hashed where it has none, info/ included)
and the symlink targets, and in ``<folder>.digest`` one digest of every entry's (path, device,
inode, size, mtime, ctime, mode).

Every later install walks the folder and compares the digest (stat calls only). A difference
sends the folder through the full check: every file hashed against the record; a file that
differs, is missing or was added is refused (BadInput naming the package and the file); a
difference only in stat data (hard links made into an env change a file's ctime) is accepted
and the digest renewed. After linking, the digest is renewed when only ctimes changed
(Renewal: each package's regular files are stat'ed again as soon as it is linked; whatever
else changed meanwhile makes the next walk differ from the renewed digest).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import List, Tuple

from envcheck.errors import BadInput
from envcheck.lockfile.model import LockedPackage
from envcheck.provision import validate
from envcheck.provision.cache_layout import unpacked_folder
from envcheck.record import frozen

CHUNK = 1 << 20
Walk = List[Tuple[str, int, int, int, int, int, int]]  # rel, dev, ino, size, mtime, ctime, mode


class Tampered(BadInput):
    """An unpacked package in the cache is not what its checked archive holds."""


@frozen
class Unpacked:
    artifact: LockedPackage
    folder: Path
    walk: Walk  # the stat data the folder was verified with
    validated: bool = False  # its metadata passed validate.py, unchanged since (the marker says)


def folder_for(cache: Path, artifact: LockedPackage) -> Path:
    return unpacked_folder(cache, artifact.file_name)


def _marks(folder: Path) -> tuple[Path, Path]:
    base = folder.parent.parent / "verified" / folder.name
    return base.with_name(f"{folder.name}.json"), base.with_name(f"{folder.name}.digest")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def walk(folder: Path) -> Walk:
    """Every entry under ``folder`` with its stat data, sorted (no symlink followed below it).

    Each directory is read through a descriptor and its entries stat'ed relative to it
    (``fstatat``): the kernel resolves one name per entry, not the whole path. The loop is
    written out (no helper call per entry): it runs for every file of every package."""
    out: Walk = []
    add, isdir = out.append, stat.S_ISDIR
    stack = [("", os.open(folder, _DIR_FLAGS))]
    try:
        while stack:
            rel_dir, fd = stack.pop()
            try:
                with os.scandir(fd) as it:
                    for e in it:
                        st = e.stat(follow_symlinks=False)
                        rel, mode = rel_dir + e.name, st.st_mode
                        add((rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                             st.st_ctime_ns, mode))
                        if isdir(mode):
                            sub = os.open(e.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                            stack.append((f"{rel}/", sub))
            finally:
                os.close(fd)
    finally:
        for _, fd in stack:
            os.close(fd)
    out.sort()
    return out


def _entry(rel: str, st: os.stat_result) -> tuple[str, int, int, int, int, int, int]:
    return (rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def digest(sha256: str, entries: Walk) -> str:
    """One digest of the package's key and every entry's stat data, serialized by ``marshal``
    (a quarter of the time of formatting them). Format version 0: no back-references and no
    interned-string marks, so equal values give equal bytes whichever objects hold them. A
    format that changes with the Python version only sends each folder once through the
    full check, as any other difference does."""
    return hashlib.sha256(marshal.dumps((sha256, entries), 0)).hexdigest()


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _describe(folder: Path, entries: Walk) -> dict[str, str]:
    """rel -> sha256 of a file, '->target' of a symlink, 'dir' of a directory."""
    try:
        listed = json.loads((folder / "info" / "paths.json").read_bytes())["paths"]
        known = {e["_path"]: e["sha256"] for e in listed if isinstance(e, dict) and e.get("sha256")}
    except (OSError, ValueError, KeyError, TypeError):
        known = {}
    out = {}
    for rel, *_, mode in entries:
        full = os.path.join(folder, rel)
        if stat.S_ISDIR(mode):
            out[rel] = "dir"
        elif stat.S_ISLNK(mode):
            out[rel] = "->" + os.readlink(full)
        else:
            out[rel] = known.get(rel) or _file_sha256(full)
    return out


def record(artifact: LockedPackage, folder: Path) -> Walk:
    """Write the marker of a folder just unpacked from the checked archive."""
    entries = walk(folder)
    files, dig = _marks(folder)
    files.parent.mkdir(parents=True, exist_ok=True)
    body = {"sha256": artifact.sha256 or artifact.md5, "files": _describe(folder, entries)}
    _write(files, json.dumps(body))
    _write(dig, f"{body['sha256']} {digest(body['sha256'], entries)}\n")
    return entries


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _key(artifact: LockedPackage) -> str:
    return artifact.sha256 or artifact.md5 or ""


# The digest marker's third word once an install validated the package's metadata and linked
# it (Renewal); a marker written at unpacking has none. A change of validate.py's rules bumps it.
VALIDATED = f"validated-{validate.VALIDATION_RULES}"


def check(artifact: LockedPackage, folder: Path) -> tuple[Walk, bool] | None:
    """The folder's stat data when it is the verified unpacked package, and whether its
    metadata was validated with the same stat data; None when it must be unpacked again
    (absent, never verified, or from another archive); Tampered when it was changed after
    it was verified."""
    files, dig = _marks(folder)
    try:
        mark = dig.read_text().split()
    except OSError:
        return None
    if len(mark) not in (2, 3) or mark[0] != _key(artifact) or not folder.is_dir():
        return None
    entries = walk(folder)
    if digest(mark[0], entries) == mark[1]:
        return entries, mark[2:] == [VALIDATED]
    try:
        recorded = json.loads(files.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None  # the marker itself is incomplete: unpack again
    _compare(artifact, folder, entries, recorded)
    _write(dig, f"{mark[0]} {digest(mark[0], entries)}\n")  # only stat data changed
    return entries, False


def _compare(artifact: LockedPackage, folder: Path, entries: Walk, recorded: dict) -> None:
    what = f"conda package {artifact.name} {artifact.version}"
    hint = f"; remove {folder} to unpack it again from the checked archive"
    now = {e[0]: e for e in entries}
    for rel in sorted(set(recorded) - set(now)):
        raise Tampered(f"{what}: {rel} is missing from the unpacked cache{hint}")
    for rel in sorted(set(now) - set(recorded)):
        raise Tampered(f"{what}: {rel} was added to the unpacked cache{hint}")
    for rel, *_, mode in entries:
        full = os.path.join(folder, rel)
        want = recorded[rel]
        if stat.S_ISDIR(mode):
            same = want == "dir"
        elif stat.S_ISLNK(mode):
            same = want == "->" + os.readlink(full)
        else:
            same = not want.startswith("->") and want != "dir" and _file_sha256(full) == want
        if not same:
            raise Tampered(f"{what}: {rel} in the unpacked cache differs from the package{hint}")


def prepare(
    items: Sequence[tuple[LockedPackage, Path]],
    cache: Path,
    unpack: Callable[[list[tuple[str, str, str]]], None],
) -> list[Unpacked]:
    """Each (artifact, checked archive) as a verified unpacked folder whose metadata passed
    validate.py, unpacking where needed through ``unpack`` (the linker child's ``extract``). A
    package validate.py or the unpacker refuses (UnsafePackage) leaves nothing in the cache."""
    found: dict[int, tuple[Walk, bool]] = {}
    todo = []
    for i, (artifact, _archive) in enumerate(items):
        folder = folder_for(cache, artifact)
        seen = check(artifact, folder)
        if seen is None:
            todo.append(i)
        else:
            found[i] = seen
    if todo:
        (cache / "pkgs").mkdir(parents=True, exist_ok=True)
        batch = [(items[i][0], items[i][1], folder_for(cache, items[i][0])) for i in todo]
        try:
            unpack([(str(archive), str(folder), _key(a)) for a, archive, folder in batch])
        except validate.UnsafePackage:  # nothing of a refused batch stays in the cache
            for _a, _archive, folder in batch:
                forget(folder)
            raise
        for i in todo:
            found[i] = (record(items[i][0], folder_for(cache, items[i][0])), False)
    ready = [Unpacked(a, folder_for(cache, a), *found[i]) for i, (a, _) in enumerate(items)]
    for u in ready:
        if u.validated:  # validated before, not changed since (the stat marker)
            continue
        try:
            validate.check_package(f"{u.artifact.name} {u.artifact.version}", u.folder, u.walk)
        except validate.UnsafePackage:
            forget(u.folder)
            raise
    return ready


def forget(folder: Path) -> None:
    """Remove an unpacked folder and its marker (a refused package)."""
    import shutil

    for mark in _marks(folder):
        mark.unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    Path(f"{folder}.lock").unlink(missing_ok=True)


def _restat(folder: Path, entries: Walk) -> Walk | None:
    """``entries`` with the files' stat data read again (None when one is gone or changed in
    more than ctime). Only regular files are looked at: linking hard-links them (their ctime
    changes) and leaves directories and symlinks of the cache as they were. Whatever else
    changed since ``entries`` were read (an entry added, a directory touched) is not in the
    new digest, so the next install's full walk differs from it and checks every file."""
    base = f"{folder}{os.sep}"
    out: Walk = []
    for e in entries:
        if stat.S_ISREG(e[6]):
            try:
                st = os.lstat(base + e[0])
            except OSError:
                return None
            now = _entry(e[0], st)
            if now[:5] != e[:5] or now[6] != e[6]:
                return None
            e = now
        out.append(e)
    return out


def _overwrite(path: Path, text: str) -> None:
    """Write a digest marker in place: a rename over the old one makes ext4 flush it
    (auto_da_alloc). A marker cut short or mixed with the old one matches no
    walk: that folder is checked in full next time, never trusted by mistake."""
    data = text.encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


@contextmanager
def verified(
    items: Sequence[tuple[LockedPackage, Path]],
    cache: Path,
    unpack: Callable[[list[tuple[str, str, str]]], None],
) -> Iterator[Renewal]:
    """The block links from the verified unpacked folders of ``items`` (``prepare``), in the
    order of the plan's records; when it completes (every package linked), their digests are
    renewed (``Renewal``)."""
    renewal = Renewal(prepare(items, cache, unpack))
    yield renewal
    renewal.write()


class Renewal:
    """The digests to renew after a complete install. Each folder's files are looked at again
    and its new digest made as soon as its package is linked (``linked``, while the linker
    child goes on with the others); the markers are written by ``write``, once every package
    is linked."""

    def __init__(self, done: Sequence[Unpacked]) -> None:
        self.done = list(done)  # in the order of the plan's records
        self.marks: dict[int, str | None] = {}

    def linked(self, index: int) -> None:
        """The package of the plan's record ``index`` is linked (other indexes: ignored)."""
        if 0 <= index < len(self.done) and index not in self.marks:
            self.marks[index] = self._mark(self.done[index])

    @staticmethod
    def _mark(u: Unpacked) -> str | None:
        """The renewed marker's text when only the files' ctimes changed, else None."""
        entries = _restat(u.folder, u.walk)
        if entries is None:
            return None
        key = _key(u.artifact)
        return f"{key} {digest(key, entries)} {VALIDATED}\n"

    def write(self) -> None:
        """Renew each digest whose folder's files changed in ctime only (the hard links
        made), marked validated (its metadata passed before it was linked)."""
        for i, u in enumerate(self.done):
            text = self.marks[i] if i in self.marks else self._mark(u)
            if text is not None:
                _renew_mark(_marks(u.folder)[1], text)


def _renew_mark(path: Path, text: str) -> None:
    """The env is in place: a marker that cannot be written (the cache gone) is left as it
    was, and the next install checks that folder in full."""
    try:
        _overwrite(path, text)
    except OSError:  # not a plain file any more (replaced), or the cache is gone
        with contextlib.suppress(OSError):
            _write(path, text)
