"""`envcheck image LOCK --os rhel7|centos7`: flags -> ImageOptions (options.py) ->
pipeline.py -> Report."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.provision.image.options import ENGINES, OSES, ImageOptions
from envcheck.provision.image.pipeline import build_image
from envcheck.report import Report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "lock",
        type=Path,
        metavar="LOCK",
        help="conda-lock file or pixi.lock the image installs",
    )
    p.add_argument(
        "--os",
        required=True,
        choices=OSES,
        dest="os_name",
        help="which Dockerfile: Dockerfile.rhel7 or Dockerfile.centos7",
    )
    p.add_argument("--tag", help="image tag (default envcheck/<recipe>:<os>)")
    p.add_argument("--builder-image", help="BUILDER_IMAGE: any image with Python >= 3.10")
    p.add_argument("--base-image", help="BASE_IMAGE: the runtime base (default: the OS's)")
    p.add_argument("--platform", default="linux-64", help="the lock's platform (linux-64)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        help="build with this one (default: the first of podman, docker, buildah)",
    )
    p.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="write the build context and print the build command instead of running it",
    )


def options_from_args(args: argparse.Namespace) -> ImageOptions:
    return ImageOptions(
        lock=args.lock,
        os_name=args.os_name,
        tag=args.tag,
        builder_image=args.builder_image,
        base_image=args.base_image,
        platform=args.platform,
        engine=args.engine,
        print_only=args.print_only,
        show_command=not args.quiet,
    )


def run(args: argparse.Namespace) -> Report:
    return build_image(options_from_args(args))
