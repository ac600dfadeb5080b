"""What `envcheck build` is asked to do, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.resolve.solve import DEFAULT_FETCH_TIMEOUT_S


@dataclass(frozen=True)
class BuildOptions:
    """What one build does; ``envcheck build``'s flags, typed."""

    recipes: tuple[Path, ...]
    out: Path = Path("locks")
    check: bool = False  # solve nothing: say whether each lock is current
    platform: str | None = None  # build only this platform of each recipe
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S
    channel_data: tuple[str, ...] = ()  # solve against these channels instead of the recipe's
    lint: bool = True  # refuse pins the RAPIDS release record contradicts
    try_: tuple[str, ...] = ()  # candidates to try one by one (``--try``): writes no lock

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(
            self,
            "recipes",
            tuple(values.path(r, "RECIPE") for r in values.sequence(self.recipes, "RECIPE")),
        )
        if not self.recipes:
            raise BadInput("build: give at least one recipe")
        set_(self, "out", values.path(self.out, "--out"))
        values.flag(self.check, "--check")
        values.optional_text(self.platform, "--platform")
        set_(self, "fetch_timeout", values.seconds(self.fetch_timeout, "--fetch-timeout"))
        set_(self, "channel_data", values.words(self.channel_data, "--channel-data"))
        values.flag(self.lint, "lint")
        set_(self, "try_", values.words(self.try_, "--try"))
