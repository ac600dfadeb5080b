"""envcheck build: flags (BuildOptions' declared fields, options.py) -> the build pipeline
(pipeline.py)."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.extras import require_build_extra
from envcheck.resolve.build.options import BuildOptions
from envcheck.resolve.solve import start_solver  # rattler: lazily

TYPE_CHECKING = False
if TYPE_CHECKING:
    from envcheck.report import Report


def add_arguments(p: argparse.ArgumentParser) -> None:
    option.add_arguments(p, BuildOptions)
    p.add_argument("--explain", action="store_true", help="print the solver's full message")


def options_from_args(args: argparse.Namespace) -> BuildOptions:
    return option.from_args(BuildOptions, args)


def run(args: argparse.Namespace) -> Report:
    require_build_extra("build")  # the flags need none of it; the solve does
    if not args.check:  # its start-up (Python, rattler) overlaps importing the pipeline
        start_solver()
    from envcheck.resolve.build.pipeline import build

    return build(options_from_args(args))
