"""Replace files so that a reader sees the old content or the new, never a half-written file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

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
    """Write every file to a temporary sibling first, then rename each over its target.

    Nothing is renamed until every temporary file is complete and flushed to disk, so a failure
    while writing (full disk, Ctrl-C) leaves every previous file byte-identical.
    """
    temps: dict[Path, str] = {}
    try:
        for target, data in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temps[target] = tmp
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            # mkstemp makes 0600 files; a lock is meant to be read by everyone, as a plain write is
            os.chmod(tmp, 0o644)
        for target, tmp in temps.items():
            os.replace(tmp, target)
    except OSError as e:
        raise BadInput(f"cannot write {e.filename or 'the lock'}: {e.strerror or e}") from None
    finally:
        for tmp in temps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
