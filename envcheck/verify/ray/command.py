"""`envcheck verify ray [ADDRESS]`: the flags (RayOptions' declared fields); the work is in
pipeline.py."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from envcheck import option
from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.ray.options import RayOptions
from envcheck.verify.ray.pipeline import verify_ray


def add_arguments(parser: argparse.ArgumentParser) -> None:
    option.add_arguments(parser, RayOptions)
    add_expectation_arguments(parser)


def ray_address(env: Mapping[str, str]) -> str | None:
    """RAY_ADDRESS as Ray's own tools read it ("auto" and "local" are Ray's words for "find or
    start one here": None, a local cluster of envcheck's own)."""
    given = env.get("RAY_ADDRESS", "").strip()
    return given if given and given not in ("auto", "local") else None


def run(args: argparse.Namespace) -> Report | int:
    if getattr(args, "list_checks", False):
        from envcheck.verify.catalog import list_report

        return list_report("ray")
    return verify_ray(options_from_args(args))


def options_from_args(args: argparse.Namespace) -> RayOptions:
    """The flags as one RayOptions (no address: RAY_ADDRESS, as Ray's tools read it)."""
    return option.from_args(RayOptions, args, expect=expect_options_from_args(args),
                            address=args.address or ray_address(os.environ))
