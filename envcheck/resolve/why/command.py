"""`envcheck why PKG LOCK` / `why --not PKG RECIPE`: flags -> WhyOptions (why_options.py) ->
why.py -> Report."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report
from envcheck.resolve.why.options import WhyOptions
from envcheck.resolve.why.pipeline import why


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("package", metavar="PKG")
    p.add_argument("file", type=Path, metavar="LOCK|RECIPE", help="a lock; with --not, a recipe")
    p.add_argument("--not", dest="not_", action="store_true",
                   help="PKG is excluded by RECIPE: solve without the exclusion and show which "
                   "entry would pull it in")
    p.add_argument("--recipe", type=Path, help="roots are this recipe's entries (default: the "
                   "recipe the lock names, else the lock's top-level packages)")
    p.add_argument("--environment", help="pixi.lock environment (default: default)")
    p.add_argument("--platform", help="only this platform")
    p.add_argument("--channel-data", action="append", metavar="URL",
                   help="with --not: solve against these channels, not the recipe's")


def options_from_args(args: argparse.Namespace) -> WhyOptions:
    return WhyOptions(package=args.package, file=args.file, not_=args.not_, recipe=args.recipe,
                      environment=args.environment, platform=args.platform,
                      channel_data=tuple(args.channel_data or ()))


def run(args: argparse.Namespace) -> Report:
    return why(options_from_args(args))
