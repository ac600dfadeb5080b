"""envcheck build: flags -> BuildOptions -> the build pipeline (envcheck.resolve.build.pipeline)."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.errors import ExitCode
from envcheck.extras import require_build_extra
from envcheck.flags import seconds
from envcheck.resolve.solve import DEFAULT_FETCH_TIMEOUT_S, start_solver  # rattler: lazily

TYPE_CHECKING = False
if TYPE_CHECKING:
    from envcheck.report import Report
    from envcheck.resolve.build.options import BuildOptions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipes", nargs="+", type=Path, metavar="RECIPE", help="recipe YAML file(s)")
    p.add_argument("--out", type=Path, default=Path("locks"), help="lock directory (locks/)")
    p.add_argument(
        "--check",
        action="store_true",
        help=f"solve nothing; exit {int(ExitCode.STALE)} when a lock is missing or stale",
    )
    p.add_argument("--explain", action="store_true", help="print the solver's full message")
    p.add_argument("--platform", help="build only this platform of the recipe")
    p.add_argument(
        "--fetch-timeout",
        type=seconds,
        default=DEFAULT_FETCH_TIMEOUT_S,
        metavar="SECONDS",
        help="limit for fetching a remote channel's repodata; past it the build exits "
        f"{int(ExitCode.UNREACHABLE)} naming the channel (default {DEFAULT_FETCH_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--channel-data",
        action="append",
        metavar="URL",
        help="solve against these channels (e.g. a local snapshot of the recipe's channels) "
        "instead of the recipe's; the lock records them (repeatable)",
    )
    p.add_argument(
        "--try",
        dest="try_",
        action="append",
        metavar="SPEC,SPEC,...",
        help="solve the recipe with each candidate added alone (pip:REQ adds to its pip "
        "entries); print which fit and, for a conflict, the smallest clashing set of entries; "
        "writes no lock",
    )
    p.add_argument(
        "--no-lint",
        action="store_true",
        help="solve even where the RAPIDS release record says the recipe's pins contradict it",
    )


def options_from_args(args: argparse.Namespace) -> BuildOptions:
    from envcheck.resolve.build.options import BuildOptions

    return BuildOptions(
        recipes=tuple(args.recipes),
        out=args.out,
        check=args.check,
        platform=args.platform,
        fetch_timeout=args.fetch_timeout,
        channel_data=tuple(args.channel_data or ()),
        lint=not args.no_lint,
        try_=tuple(args.try_ or ()),
    )


def run(args: argparse.Namespace) -> Report:
    require_build_extra("build")  # the flags need none of it; the solve does
    if not args.check:  # its start-up (Python, rattler) overlaps importing the pipeline
        start_solver()
    from envcheck.resolve.build.pipeline import build

    return build(options_from_args(args))
