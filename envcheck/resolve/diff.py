"""envcheck diff OLD NEW: what a lock change adds, removes and changes, per platform."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report, Result, Status
from envcheck.resolve.changes import Change, changes_table, compare, markdown, version_build
from envcheck.resolve.lockgraph import LockGraph, read_graph


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", type=Path, metavar="OLD", help="conda-lock, pixi.lock or explicit file")
    p.add_argument("new", type=Path, metavar="NEW", help="conda-lock, pixi.lock or explicit file")
    p.add_argument("--environment", help="pixi.lock environment (default: default)")
    p.add_argument("--markdown", action="store_true", help="print a markdown table for review")


def _versions(g: LockGraph) -> dict[tuple[str, str, str], str]:
    return {
        (platform, n.manager, n.name): version_build(n.version, n.build)
        for platform, nodes in g.platforms.items()
        for n in nodes.values()
    }


def lock_diff(old: Path, new: Path, environment: str | None = None) -> list[Change]:
    return compare(_versions(read_graph(old, environment)), _versions(read_graph(new, environment)))


def run(args: argparse.Namespace) -> Report:
    changes = lock_diff(args.old, args.new, args.environment)
    counts = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "changed")}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    result = Result("diff", Status.PASS, f"{args.old} -> {args.new}: {summary}", group="build")
    tables = (changes_table(((args.new.name, c) for c in changes), "changes"),) if changes else ()
    # --markdown: the table for a review is the output, the same result goes to --json/--junit
    output = markdown(changes, str(args.old), str(args.new)) if args.markdown else ""
    return Report("envcheck diff", results=(result,), tables=tables, output=output)
