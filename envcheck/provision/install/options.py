"""What `envcheck install` is asked to do, as one typed object (from flags or keyword
arguments): each field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

import os
from pathlib import Path

from envcheck import values
from envcheck.flags import seconds
from envcheck.option import REQUIRED, Option, declared
from envcheck.record import frozen


def default_cache() -> Path:
    """$ENVCHECK_CACHE, else $XDG_CACHE_HOME/envcheck, else ~/.cache/envcheck."""
    env = os.environ.get("ENVCHECK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck"


def _lock_timeout(value: object, said: str) -> float:
    return values.seconds(value, said, zero=True)


@frozen
@declared
class InstallOptions:
    lock: Path = Option(REQUIRED, positional=True, type=Path, metavar="LOCK", check=values.path,
                        help="a conda-lock file or a pixi.lock")
    prefix: Path = Option(REQUIRED, type=Path, check=values.path,
                          help="the environment to create")
    platform: str | None = Option(  # default: this machine's
        check=values.optional_text, help="the lock's platform to install (default: this machine's)")
    cache_dir: Path | None = Option(  # default: default_cache()
        type=Path, check=values.optional_path,
        help="staging cache for checked packages ($ENVCHECK_CACHE, else ~/.cache/envcheck)")
    force: bool = Option(False, action="store_true", check=values.flag,
                         help="install even when the prefix's stamp matches")
    lock_timeout: float = Option(  # wait this long for another install into the prefix (0: none)
        600.0, type=seconds, metavar="S", check=_lock_timeout,
        help="wait this long for another install into the same prefix (0: fail at once; "
        "default %(default)g)")
    fetch_timeout: float = Option(  # each package's download, all tries together
        900.0, type=seconds, metavar="S", check=values.seconds,
        help="deadline for each package's download, all tries together (default %(default)g)")
    allow_shared_parent: bool = Option(
        False, action="store_true", check=values.flag,
        help="as root, install even where another user can write the prefix's parent (no "
        "sticky bit): that user could swap what is built there for a link")
    progress: bool = False  # a progress line on stderr (the CLI: envcheck.progress.shown())

    def __post_init__(self) -> None:
        values.flag(self.progress, "progress")

    @property
    def cache(self) -> Path:
        return self.cache_dir or default_cache()
