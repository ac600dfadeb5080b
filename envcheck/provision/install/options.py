"""What `envcheck install` is asked to do, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

import os
from pathlib import Path

from envcheck import values
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
        set_ = object.__setattr__
        set_(self, "lock", values.path(self.lock, "LOCK"))
        set_(self, "prefix", values.path(self.prefix, "--prefix"))
        set_(self, "cache_dir", values.optional_path(self.cache_dir, "--cache-dir"))
        values.optional_text(self.platform, "--platform")
        values.flag(self.force, "--force")
        values.flag(self.progress, "progress")
        set_(self, "lock_timeout", values.seconds(self.lock_timeout, "--lock-timeout", zero=True))
        set_(self, "fetch_timeout", values.seconds(self.fetch_timeout, "--fetch-timeout"))

    @property
    def cache(self) -> Path:
        return self.cache_dir or default_cache()
