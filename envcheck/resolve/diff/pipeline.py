"""envcheck diff OLD NEW: what a lock change adds, removes and changes, per platform.

The pipeline: DiffOptions (options.py) -> diff() -> Report; command.py makes the
flags from DiffOptions."""

from __future__ import annotations

from pathlib import Path

from envcheck.report import Report, Result, Status
from envcheck.resolve.changes import Change, changes_table, compare, markdown, version_build
from envcheck.resolve.diff.options import DiffOptions
from envcheck.resolve.lockgraph import LockGraph, read_graph


def _versions(g: LockGraph) -> dict[tuple[str, str, str], str]:
    return {
        (platform, n.manager, n.name): version_build(n.version, n.build)
        for platform, nodes in g.platforms.items()
        for n in nodes.values()
    }


def lock_diff(old: Path, new: Path, environment: str | None = None) -> list[Change]:
    return compare(_versions(read_graph(old, environment)), _versions(read_graph(new, environment)))


def diff(opts: DiffOptions) -> Report:
    changes = lock_diff(opts.old, opts.new, opts.environment)
    counts = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "changed")}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    result = Result("diff", Status.PASS, f"{opts.old} -> {opts.new}: {summary}", group="build")
    tables = (changes_table(((opts.new.name, c) for c in changes), "changes"),) if changes else ()
    # markdown: the table for a review is the output, the same result goes to --json/--junit
    output = markdown(changes, str(opts.old), str(opts.new)) if opts.markdown else ""
    return Report("envcheck diff", results=(result,), tables=tables, output=output)
