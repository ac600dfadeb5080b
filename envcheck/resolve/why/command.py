"""`envcheck why PKG LOCK` / `why --not PKG RECIPE`: flags (WhyOptions' declared fields,
options.py) -> pipeline.py -> Report."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.resolve.why.options import WhyOptions
from envcheck.resolve.why.pipeline import why


def add_arguments(p: argparse.ArgumentParser) -> None:
    option.add_arguments(p, WhyOptions)


def options_from_args(args: argparse.Namespace) -> WhyOptions:
    return option.from_args(WhyOptions, args)


def run(args: argparse.Namespace) -> Report:
    return why(options_from_args(args))
