"""What `envcheck diff` compares, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values


@dataclass(frozen=True)
class DiffOptions:
    old: Path
    new: Path
    environment: str | None = None  # pixi.lock environment
    markdown: bool = False  # the report's output is a markdown table for review

    def __post_init__(self) -> None:
        object.__setattr__(self, "old", values.path(self.old, "OLD"))
        object.__setattr__(self, "new", values.path(self.new, "NEW"))
        values.optional_text(self.environment, "--environment")
        values.flag(self.markdown, "--markdown")
