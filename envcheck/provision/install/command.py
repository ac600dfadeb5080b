"""envcheck install LOCK --prefix DIR: the flags InstallOptions declares (options.py), read
into InstallOptions for the pipeline (a progress line where envcheck.progress shows one)."""

from __future__ import annotations

from envcheck import option, progress
from envcheck.provision.install.options import InstallOptions
from envcheck.provision.install.pipeline import install_lock

add_arguments, options_from_args, run = option.command(
    InstallOptions, install_lock,
    lambda args: {"progress": progress.shown()},
)
