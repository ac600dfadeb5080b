"""`envcheck diff OLD NEW`: flags -> DiffOptions (diff_options.py) -> diff.py -> Report."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report
from envcheck.resolve.diff.options import DiffOptions
from envcheck.resolve.diff.pipeline import diff


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", type=Path, metavar="OLD", help="lock file (conda-lock or pixi.lock)")
    p.add_argument("new", type=Path, metavar="NEW", help="lock file (conda-lock or pixi.lock)")
    p.add_argument("--environment", help="pixi.lock environment (default: default)")
    p.add_argument("--markdown", action="store_true", help="print a markdown table for review")


def options_from_args(args: argparse.Namespace) -> DiffOptions:
    return DiffOptions(old=args.old, new=args.new, environment=args.environment,
                       markdown=args.markdown)


def run(args: argparse.Namespace) -> Report:
    return diff(options_from_args(args))
