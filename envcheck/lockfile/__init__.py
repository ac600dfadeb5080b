"""Lock files: one model of a locked package, the one reader, the writer and the name tables.

``read_lock(path, platform=None, *, environment=None, records=False) -> Lock`` reads a
conda-lock file, a pixi.lock or a conda explicit file (read.py); every caller reads locks
through it (install through ``read_lock_records``, which is ``records=True``). ``model`` and
the readers run on Python 3.8 with the standard library and PyYAML, so verify (which runs
inside old environments) reads locks with them; py-rattler (``records=True``, install) and
conda-lock's models (``condalock``, build) are imported only when asked for. ``write`` needs
the build extra. This package imports nothing from verify or provision.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from envcheck.lockfile.model import Lock, LockedPackage
    from envcheck.lockfile.read import read_lock

__all__ = ["Lock", "LockedPackage", "read_lock"]


def __getattr__(name: str) -> object:
    """The names above, their modules imported on first use (verify imports ``model`` alone)."""
    if name == "read_lock":
        from envcheck.lockfile.read import read_lock

        return read_lock
    if name in ("Lock", "LockedPackage"):
        from envcheck.lockfile import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
