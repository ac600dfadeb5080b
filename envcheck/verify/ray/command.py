"""`envcheck verify ray [ADDRESS]`: the flags; the work is in pipeline.py."""

from __future__ import annotations

import argparse

from envcheck.flags import seconds
from envcheck.report import Report
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args
from envcheck.verify.ray.options import DEFAULT_TIMEOUT, RayOptions
from envcheck.verify.ray.pipeline import verify_ray


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "address", nargs="?",
        help="the cluster, as `ray start --address` takes it (host:port of the head's GCS) or "
        "ray://host:port (Ray Client); none: start a local Ray cluster and shut it down after",
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


def run(args: argparse.Namespace) -> Report | int:
    if getattr(args, "list_checks", False):
        from envcheck.verify.catalog import list_report

        return list_report("ray")
    return verify_ray(RayOptions(
        address=args.address, timeout=args.timeout, expect_nodes=args.expect_nodes,
        train=args.train, train_workers=args.train_workers,
        expect=expect_options_from_args(args),
    ))
