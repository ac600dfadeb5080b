"""envcheck install LOCK --prefix DIR: the flags InstallOptions declares (options.py), read
into InstallOptions for the pipeline (progress bars where stderr is a terminal, not --quiet)."""

from __future__ import annotations

import sys

from envcheck import option
from envcheck.provision.install.options import InstallOptions
from envcheck.provision.install.pipeline import install_lock

add_arguments, options_from_args, run = option.command(
    InstallOptions, install_lock,
    lambda args: {"progress": not args.quiet and sys.stderr.isatty()},
)
