"""`envcheck verify cluster`: flags -> ClusterOptions -> verify/cluster/pipeline.py -> Report.

This module only parses: what runs is the pipeline (also verify/api.py's verify_cluster).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.flags import seconds
from envcheck.report import Report
from envcheck.verify.cluster.connect import DEFAULT_TIMEOUT
from envcheck.verify.cluster.options import (
    DEFAULT_SMOKE_TIMEOUT,
    ClusterOptions,
    smoke_selection,
)
from envcheck.verify.cluster.pipeline import verify_cluster
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args

GROUP = "cluster"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "address",
        nargs="?",
        help="scheduler address (tcp://, tls://, ucx://); none: start a local cluster",
    )
    parser.add_argument("--scheduler-file", type=Path, metavar="FILE", help="read the address")
    tls = parser.add_argument_group("TLS (distributed.security.Security)")
    tls.add_argument("--tls-ca-file", type=Path, metavar="FILE", help="CA certificate (PEM)")
    tls.add_argument("--tls-cert", type=Path, metavar="FILE", help="client certificate (PEM)")
    tls.add_argument("--tls-key", type=Path, metavar="FILE", help="client private key (PEM)")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"limit for connecting and for each process's facts (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--smoke",
        default="all",
        metavar="LIST",
        help="comma-separated smoke tests to run, 'all' (default: those that apply) or 'none'",
    )
    parser.add_argument(
        "--smoke-timeout",
        type=seconds,
        default=DEFAULT_SMOKE_TIMEOUT,
        metavar="SECONDS",
        help=f"limit for each smoke test (default {DEFAULT_SMOKE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--bench", action="store_true", help="measure transfer bandwidth and NCCL all-reduce"
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="workers of the embedded cluster (default: one per GPU, else LocalCluster's)",
    )
    parser.add_argument(
        "--no-plugins", action="store_true", help="skip checks from the envcheck.checks group"
    )
    jq = parser.add_argument_group("dask-jobqueue (start the workers as batch jobs)")
    jq.add_argument("--jobqueue", choices=("slurm",), help="start --workers N through SLURMCluster")
    jq.add_argument("--jobqueue-config", type=Path, metavar="FILE",
                    help="YAML with a jobqueue: slurm: section (dask-jobqueue's own format)")
    jq.add_argument("--jobqueue-option", action="append", default=[], metavar="KEY=VALUE",
                    help="SLURMCluster argument, e.g. queue=gpu, walltime=00:30:00 (repeatable)")
    jq.add_argument("--gpus-per-worker", type=int, default=1, metavar="G",
                    help="GRES GPUs per jobqueue worker (default 1; 0 for CPU workers)")
    add_expectation_arguments(parser)


def options_from_args(args: argparse.Namespace) -> ClusterOptions:
    """The flags as one ClusterOptions: the only place that reads this verb's Namespace."""
    return ClusterOptions(
        address=args.address,
        scheduler_file=args.scheduler_file,
        tls_ca_file=args.tls_ca_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        timeout=args.timeout,
        smoke=smoke_selection(args.smoke),
        smoke_timeout=args.smoke_timeout,
        bench=args.bench,
        workers=args.workers,
        plugins=not args.no_plugins,
        jobqueue=args.jobqueue,
        jobqueue_config=args.jobqueue_config,
        jobqueue_options=tuple(args.jobqueue_option),
        gpus_per_worker=args.gpus_per_worker,
        expect=expect_options_from_args(args),
        debug=getattr(args, "debug", False),
    )


def run(args: argparse.Namespace) -> Report | int:
    if args.list_checks:
        from envcheck.verify.catalog import list_report

        return list_report("cluster")
    return verify_cluster(options_from_args(args))
