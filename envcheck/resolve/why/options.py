"""What `envcheck why` is asked, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput


@dataclass(frozen=True)
class WhyOptions:
    package: str
    file: Path  # a lock; with not_, a recipe
    not_: bool = False  # the recipe excludes package: solve without the exclusion
    recipe: Path | None = None  # roots: this recipe's entries (default: the one the lock names)
    environment: str | None = None  # pixi.lock environment
    platform: str | None = None  # only this platform
    channel_data: tuple[str, ...] = ()  # with not_: solve against these channels

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not values.text(self.package, "PKG").strip():
            raise BadInput("why: give a package name")
        set_(self, "file", values.path(self.file, "LOCK|RECIPE"))
        if not self.file.exists() and Path(self.package).is_file():
            raise BadInput(f"{self.file} does not exist and {self.package} is a file: the "
                           f"package comes first (envcheck why {self.file} {self.package})")
        set_(self, "recipe", values.optional_path(self.recipe, "--recipe"))
        values.flag(self.not_, "--not")
        values.optional_text(self.environment, "--environment")
        values.optional_text(self.platform, "--platform")
        set_(self, "channel_data", values.words(self.channel_data, "--channel-data"))
        if self.channel_data and not self.not_:
            raise BadInput("--channel-data is for --not (a solve): a lock is read as it is")
