"""Replace files so that a reader sees the old content or the new, never a half-written file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from envcheck import interrupts
from envcheck.destinations import check_destination, destination, write_temp
from envcheck.errors import BadInput


def check_writable(directory: Path) -> None:
    """Create ``directory`` if needed; BadInput when files cannot be created in it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"output directory {directory} cannot be created: {e.strerror}") from None
    if not directory.is_dir():
        raise BadInput(f"output directory {directory} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".envcheck-probe-", dir=directory)
    except OSError as e:
        raise BadInput(f"output directory {directory} is not writable: {e.strerror}") from None
    os.close(fd)
    os.unlink(probe)


def write_files_atomically(files: Mapping[Path, bytes]) -> None:
    """Replace every file in ``files`` or none of them.

    Every new file is written to a temporary sibling and flushed first, and every existing
    target gets a hard-linked backup; only then are the temporary files renamed over their
    targets. A rename that fails (an immutable file, a vanished directory) rolls back the ones
    already done, so a reader never sees half a lock pair. The renames are the run's commit
    point (``interrupts.commit``): a Ctrl-C before it leaves every file as it was, one after it
    lets the run finish. A target that is not a regular file (a device node, a FIFO, a
    directory) is refused before anything is written, and again just before the renames;
    links are resolved as ``destinations.destination`` resolves them (one of another user's
    refused), and the files replaced are the ones they lead to.
    """
    files = {destination(t, str(t), replace=True): data for t, data in files.items()}
    temps: dict[Path, str] = {}
    backups: dict[Path, str] = {}
    try:
        for target, data in files.items():
            temps[target] = write_temp(target, data, str(target))
        for target in files:
            check_destination(target, str(target), replace=True)
            if os.path.lexists(target):
                backups[target] = _backup(target)
        interrupts.commit()
        _swap(temps, backups)
    finally:
        for tmp in [*temps.values(), *backups.values()]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _backup(target: Path) -> str:
    """A hard link to ``target``'s current content beside it (no copy: same inode)."""
    name = tempfile.mktemp(prefix=f".{target.name}.", suffix=".bak", dir=target.parent)
    try:
        os.link(target, name)
    except OSError as e:
        # link() fails on an immutable or append-only file, as rename over it would
        raise BadInput(f"cannot replace {target}: {e.strerror or e}") from None
    return name


def _swap(temps: Mapping[Path, str], backups: Mapping[Path, str]) -> None:
    done: list[Path] = []
    for target, tmp in temps.items():
        try:
            os.replace(tmp, target)
        except OSError as e:
            problem = f"cannot replace {target}: {e.strerror or e}"
            failed = _roll_back(done, backups)
            if failed:  # stays committed: an interrupt must not claim nothing was replaced
                problem += "; could not restore " + ", ".join(failed)
            else:
                interrupts.uncommit()
                problem += " (no file was changed)"
            raise BadInput(problem) from None
        done.append(target)


def _roll_back(done: list[Path], backups: Mapping[Path, str]) -> list[str]:
    """Put back what the swap replaced; the files that could not be restored."""
    failed = []
    for target in reversed(done):
        try:
            if target in backups:
                os.replace(backups[target], target)
            else:
                os.unlink(target)
        except OSError as e:
            failed.append(f"{target} ({e.strerror or e})")
    return failed
