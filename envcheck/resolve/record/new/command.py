"""`envcheck recipe new`: flags -> Options (options.py) -> pipeline.py's recipe_new -> Report."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report
from envcheck.resolve.record.new.options import DEFAULT_CHANNELS, OSES, Options, comma_list
from envcheck.resolve.record.new.pipeline import LIBS, recipe_new


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rapids", required=True, help="RAPIDS release, e.g. 22.08")
    p.add_argument("--cuda", required=True, help="CUDA version the target's drivers support")
    p.add_argument("--os", required=True, choices=sorted(OSES), help="target OS (sets glibc)")
    p.add_argument("--python", help="Python X.Y (default: the newest the release was built for)")
    p.add_argument("--toolkit", help="CUDA toolkit X.Y to build against (default: --cuda)")
    p.add_argument("--libs", type=comma_list,
                   help=f"RAPIDS libraries (default: {','.join(LIBS)})")
    p.add_argument("--with", dest="with_", type=comma_list, default=(), metavar="LIST",
                   help="extras: xgboost, ucx, torch, or any package name/spec")
    p.add_argument("--exclude", type=comma_list, default=(), metavar="LIST",
                   help="packages the solve must not install (recipe `exclude:`)")
    p.add_argument("--exclude-reason", default="", help="why (goes into the recipe)")
    p.add_argument("--pip", action="append", default=[], help="a pip requirement (repeatable)")
    p.add_argument("--channels", type=comma_list, default=DEFAULT_CHANNELS)
    p.add_argument("--name", help="recipe name (default: rapids-RELEASE-OS)")
    p.add_argument("--description", default="")
    p.add_argument("--target", action="append", default=[], help="a target machine (repeatable)")
    p.add_argument("--out", type=Path, help="write here instead of printing")


def options_from_args(args: argparse.Namespace) -> Options:
    return Options(
        rapids=args.rapids, cuda=args.cuda, os=args.os, python=args.python,
        toolkit=args.toolkit, libs=args.libs, with_=tuple(args.with_),
        exclude=tuple(args.exclude), exclude_reason=args.exclude_reason, pip=tuple(args.pip),
        name=args.name, description=args.description, targets=tuple(args.target),
        channels=tuple(args.channels), out=args.out,
    )


def run(args: argparse.Namespace) -> Report:
    return recipe_new(options_from_args(args))
