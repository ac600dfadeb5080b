"""`envcheck verify ray [ADDRESS]`: the flags; the work is in pipeline.py."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from envcheck.flags import seconds
from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.ray.options import DEFAULT_TIMEOUT, RayOptions
from envcheck.verify.ray.pipeline import verify_ray


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "address", nargs="?",
        help="the cluster, as `ray start --address` takes it (host:port of the head's GCS) or "
        "ray://host:port (Ray Client); none: RAY_ADDRESS where it is set, as Ray's own tools "
        "read it, else start a local Ray cluster and shut it down after",
    )
    parser.add_argument(
        "--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"limit for connecting, for collecting every node's facts, and for the --train run "
        f"(default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--expect-nodes", type=int, metavar="N",
                        help="fail unless exactly N nodes are alive (names the shortfall)")
    parser.add_argument("--train", action="store_true",
                        help="also run a Ray Train TorchTrainer all-reduce (gloo on CPU, NCCL on "
                        "GPUs) and check its known answer; costs ~15 s")
    parser.add_argument("--train-workers", type=int, metavar="N",
                        help="Train workers (default: one per GPU, else one per node, 2 at least; "
                        "half a CPU each)")
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
    return verify_ray(RayOptions(
        address=args.address or ray_address(os.environ), timeout=args.timeout,
        expect_nodes=args.expect_nodes,
        train=args.train, train_workers=args.train_workers,
        expect=expect_options_from_args(args),
    ))
