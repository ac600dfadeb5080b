"""`envcheck slurm script`: print (or --submit) an sbatch script whose Dask cluster verifies
itself before the work runs. docs/slurm.md has the script's anatomy.

This module only parses: flags (Options' declared fields, options.py) -> pipeline.py ->
Report."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.slurm.options import Options
from envcheck.slurm.pipeline import slurm_script


def add_arguments(parser: argparse.ArgumentParser) -> None:
    option.add_arguments(parser, Options)


def options_from_args(args: argparse.Namespace) -> Options:
    """The flags as one Options: the only place that reads this verb's Namespace."""
    return option.from_args(Options, args)


def run(args: argparse.Namespace) -> Report:
    return slurm_script(options_from_args(args))
