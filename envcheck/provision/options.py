"""What `envcheck install` is asked to do, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

import os
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.record import frozen


def default_cache() -> Path:
    """$ENVCHECK_CACHE, else $XDG_CACHE_HOME/envcheck, else ~/.cache/envcheck."""
    env = os.environ.get("ENVCHECK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck"


@frozen
class InstallOptions:
    lock: Path
    prefix: Path
    platform: str | None = None  # default: this machine's
    cache_dir: Path | None = None  # default: default_cache()
    force: bool = False  # install even when the prefix's stamp matches
    progress: bool = False  # progress bars on stderr
    lock_timeout: float = 600.0  # wait this long for another install into the prefix (0: none)
    fetch_timeout: float = 900.0  # each package's download, all tries together

    def __post_init__(self) -> None:
        if self.fetch_timeout <= 0:
            raise BadInput(f"--fetch-timeout must be positive (got {self.fetch_timeout:g})")

    @property
    def cache(self) -> Path:
        return self.cache_dir or default_cache()
