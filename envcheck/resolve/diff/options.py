"""What `envcheck diff` compares, as one typed object (from flags or keyword arguments): each
field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.option import REQUIRED, Option, declared

LOCK_HELP = "lock file (conda-lock or pixi.lock)"


@dataclass(frozen=True)
@declared
class DiffOptions:
    old: Path = Option(REQUIRED, positional=True, type=Path, metavar="OLD", check=values.path,
                       help=LOCK_HELP)
    new: Path = Option(REQUIRED, positional=True, type=Path, metavar="NEW", check=values.path,
                       help=LOCK_HELP)
    environment: str | None = Option(check=values.optional_text,  # pixi.lock environment
                                     help="pixi.lock environment (default: default)")
    markdown: bool = Option(  # the report's output is a markdown table for review
        False, action="store_true", check=values.flag, help="print a markdown table for review")
