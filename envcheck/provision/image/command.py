"""`envcheck image LOCK --os rhel7|centos7`: flags (ImageOptions' declared fields, options.py)
-> pipeline.py -> Report."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.provision.image.options import ImageOptions
from envcheck.provision.image.pipeline import build_image
from envcheck.report import Report


def add_arguments(p: argparse.ArgumentParser) -> None:
    option.add_arguments(p, ImageOptions)


def options_from_args(args: argparse.Namespace) -> ImageOptions:
    return option.from_args(ImageOptions, args, show_command=not args.quiet)


def run(args: argparse.Namespace) -> Report:
    return build_image(options_from_args(args))
