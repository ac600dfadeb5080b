"""What `envcheck recipe import` is asked, as one typed object (from flags or keyword
arguments): each field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.option import REQUIRED, Option, declared


@dataclass(frozen=True)
@declared
class ImportOptions:
    environment: Path = Option(
        REQUIRED, positional=True, type=Path, metavar="ENVIRONMENT_YML", check=values.path,
        help="a conda environment.yml (conda env create -f, conda-lock)")
    platform: str | None = Option(
        check=values.optional_text,
        help="the platform to lock when the file names none (default: this machine's)")
    out: Path | None = Option(type=Path, check=values.optional_path,
                              help="write the recipe here instead of printing it")
