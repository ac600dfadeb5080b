"""What `envcheck why` is asked, as one typed object (from flags or keyword arguments): each
field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.option import REQUIRED, Option, declared


def _package(value: object, said: str) -> str:
    if not values.text(value, said).strip():
        raise BadInput("why: give a package name")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
@declared
class WhyOptions:
    package: str = Option(REQUIRED, positional=True, metavar="PKG", check=_package)
    file: Path = Option(  # a lock; with not_, a recipe
        REQUIRED, positional=True, type=Path, metavar="LOCK|RECIPE", check=values.path,
        help="a lock; with --not, a recipe")
    not_: bool = Option(  # the recipe excludes package: solve without the exclusion
        False, flag="--not", action="store_true", check=values.flag,
        help="PKG is excluded by RECIPE: solve without the exclusion and show which entry "
        "would pull it in")
    recipe: Path | None = Option(  # roots: this recipe's entries (default: the one the lock names)
        type=Path, check=values.optional_path,
        help="roots are this recipe's entries (default: the recipe the lock names, else the "
        "lock's top-level packages)")
    environment: str | None = Option(check=values.optional_text,  # pixi.lock environment
                                     help="pixi.lock environment (default: default)")
    platform: str | None = Option(check=values.optional_text, help="only this platform")
    channel_data: tuple[str, ...] = Option(  # with not_: solve against these channels
        (), action="append", metavar="URL", check=values.words,
        help="with --not: solve against these channels, not the recipe's")

    def __post_init__(self) -> None:
        """The checks across fields (each field's own ran first, ``declared``)."""
        if not self.file.exists() and Path(self.package).is_file():
            raise BadInput(f"{self.file} does not exist and {self.package} is a file: the "
                           f"package comes first (envcheck why {self.file} {self.package})")
        if self.channel_data and not self.not_:
            raise BadInput("--channel-data is for --not (a solve): a lock is read as it is")
