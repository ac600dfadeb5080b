"""`envcheck docs [TOPIC]`: print a page of the documentation the install carries
(envcheck.shipped_docs); without a topic, the list of topics."""

from __future__ import annotations

import argparse

from envcheck.report import Report, Result, Status


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", nargs="?", default="", metavar="TOPIC",
                   help="exit-codes, expect, recipes, security, build, ... (none: list them)")


def run(args: argparse.Namespace) -> Report:
    from envcheck.shipped_docs import page_text

    text = page_text(args.topic)
    result = Result("docs", Status.PASS, f"printed {args.topic or 'the topics'}")
    return Report("envcheck docs", results=(result,), output=text)
