"""`envcheck recipe new`: flags (Options' declared fields, options.py) -> pipeline.py's
recipe_new -> Report."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.resolve.record.new.options import Options
from envcheck.resolve.record.new.pipeline import recipe_new


def add_arguments(p: argparse.ArgumentParser) -> None:
    option.add_arguments(p, Options)


def options_from_args(args: argparse.Namespace) -> Options:
    return option.from_args(Options, args)


def run(args: argparse.Namespace) -> Report:
    return recipe_new(options_from_args(args))
