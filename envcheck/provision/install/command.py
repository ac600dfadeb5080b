"""envcheck install LOCK --prefix DIR: the flags (InstallOptions' declared fields) read into
InstallOptions for the pipeline."""

from __future__ import annotations

import argparse
import sys

from envcheck import option
from envcheck.provision.install.options import InstallOptions
from envcheck.provision.install.pipeline import install_lock
from envcheck.report import Report


def add_arguments(p: argparse.ArgumentParser) -> None:
    option.add_arguments(p, InstallOptions)


def options_from_args(args: argparse.Namespace) -> InstallOptions:
    return option.from_args(InstallOptions, args, progress=not args.quiet and sys.stderr.isatty())


def run(args: argparse.Namespace) -> Report:
    return install_lock(options_from_args(args))
