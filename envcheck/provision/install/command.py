"""envcheck install LOCK --prefix DIR: the flags, read into InstallOptions for the pipeline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envcheck.flags import seconds
from envcheck.provision.install.options import InstallOptions
from envcheck.provision.install.pipeline import install_lock
from envcheck.report import Report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("lock", type=Path, metavar="LOCK", help="a conda-lock file or a pixi.lock")
    p.add_argument("--prefix", type=Path, required=True, help="the environment to create")
    p.add_argument("--platform", help="the lock's platform to install (default: this machine's)")
    p.add_argument(
        "--cache-dir",
        type=Path,
        help="staging cache for checked packages ($ENVCHECK_CACHE, else ~/.cache/envcheck)",
    )
    p.add_argument(
        "--force", action="store_true", help="install even when the prefix's stamp matches"
    )
    p.add_argument(
        "--lock-timeout",
        type=seconds,
        default=600.0,
        metavar="S",
        help="wait this long for another install into the same prefix (0: fail at once; "
        "default 600)",
    )
    p.add_argument(
        "--fetch-timeout",
        type=seconds,
        default=900.0,
        metavar="S",
        help="deadline for each package's download, all tries together (default 900)",
    )


def options_from_args(args: argparse.Namespace) -> InstallOptions:
    return InstallOptions(
        lock=args.lock,
        prefix=args.prefix,
        platform=args.platform,
        cache_dir=args.cache_dir,
        force=args.force,
        progress=not args.quiet and sys.stderr.isatty(),
        lock_timeout=args.lock_timeout,
        fetch_timeout=args.fetch_timeout,
    )


def run(args: argparse.Namespace) -> Report:
    return install_lock(options_from_args(args))
