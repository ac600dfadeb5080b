"""`envcheck recipe import`: flags -> recipe_import.py (an environment.yml -> the recipe it
reads as, printed or written to --out)."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("environment", type=Path, metavar="ENVIRONMENT_YML",
                   help="a conda environment.yml (conda env create -f, conda-lock)")
    p.add_argument("--platform", help="the platform to lock when the file names none "
                   "(default: this machine's)")
    p.add_argument("--out", type=Path, help="write the recipe here instead of printing it")


def run(args: argparse.Namespace) -> Report:
    from envcheck.extras import require_build_extra

    require_build_extra("recipe import")
    from envcheck.resolve.recipe_import import recipe_import

    return recipe_import(args.environment, args.platform, args.out)
