"""`envcheck verify cluster`: flags -> ClusterOptions -> verify/cluster/pipeline.py -> Report.

This module only parses. An option's walk from the command line to the pipeline: (1) cli.py
parses the flags ClusterOptions declares (options.py, added here by option.add_arguments),
(2) calls run, (3) options_from_args reads them with option.from_args into (4) ClusterOptions,
whose fields' checks and then its checks across fields run as it is made, (5) the pipeline
takes it. api.verify_cluster builds the same ClusterOptions from its keywords.
"""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.report import Report
from envcheck.verify.cluster.options import ClusterOptions
from envcheck.verify.cluster.pipeline import verify_cluster
from envcheck.verify.expect_options import add_expectation_arguments, expect_options_from_args

GROUP = "cluster"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    option.add_arguments(parser, ClusterOptions)
    add_expectation_arguments(parser)


def run(args: argparse.Namespace) -> Report | int:
    if args.list_checks:
        from envcheck.verify.catalog import list_report

        return list_report("cluster")
    return verify_cluster(options_from_args(args))


def options_from_args(args: argparse.Namespace) -> ClusterOptions:
    """The flags as one ClusterOptions: the only place that reads this verb's Namespace."""
    return option.from_args(ClusterOptions, args, expect=expect_options_from_args(args),
                            debug=getattr(args, "debug", False))
