"""A lock as a dependency graph: per platform, its packages by name, edges their ``requires``.

The packages are ``envcheck.lockfile``'s, read by its one reader (conda-lock, pixi.lock or
conda explicit files; an explicit file records no edges).
"""

from __future__ import annotations

from pathlib import Path

from envcheck.lockfile import read_lock
from envcheck.lockfile.model import Lock, LockedPackage
from envcheck.record import frozen


@frozen
class LockGraph:
    lock: Lock
    platforms: dict[str, dict[str, LockedPackage]]  # platform -> name -> package

    @property
    def path(self) -> Path:
        return self.lock.path

    @property
    def environment(self) -> str:
        return self.lock.environment

    @property
    def sources(self) -> tuple[str, ...]:
        """The recipe file(s) a conda-lock file's metadata names."""
        return self.lock.sources


def graph_of(lock: Lock) -> LockGraph:
    return LockGraph(lock, lock.by_platform())


def read_graph(path: Path, environment: str | None = None) -> LockGraph:
    """The packages of one environment of a lock, per platform; BadInput when unreadable."""
    return graph_of(read_lock(path, environment=environment))
