"""`envcheck diff OLD NEW`: flags (DiffOptions' declared fields, options.py) -> pipeline.py ->
Report."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.resolve.diff.options import DiffOptions
from envcheck.resolve.diff.pipeline import diff


def add_arguments(p: argparse.ArgumentParser) -> None:
    option.add_arguments(p, DiffOptions)


def options_from_args(args: argparse.Namespace) -> DiffOptions:
    return option.from_args(DiffOptions, args)


def run(args: argparse.Namespace) -> Report:
    return diff(options_from_args(args))
