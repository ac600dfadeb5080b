"""The one runner of checks: node, cluster, job and ray registries, plugins, smoke tests.

A check is a pure function (facts, expectations) -> list[Result]. run_checks runs a registry
in order: a check that ``--skip`` names is said once (skipped), never silently absent; one that
raises, or returns anything but a list of Result, becomes an error naming it, and the rest
still run.
"""

from __future__ import annotations

import time

from envcheck.record import replace
from envcheck.report import Result, Status

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable, Collection, Iterable, Mapping

SKIPPED = "skipped by --skip"


def skipped(check_id: str, group: str, node: str = "") -> Result:
    """What a report says of a check it did not run: one skip, so nothing is silently absent."""
    return Result(check_id, Status.SKIP, SKIPPED, node=node, group=group)


def skips(ids: Iterable[str], skip: Collection[str], group: str, node: str = "") -> list[Result]:
    """One skip result for each of ``ids`` that ``skip`` names, in the order of ``ids``."""
    return [skipped(check_id, group, node) for check_id in ids if check_id in skip]


def run_check(
    check_id: str, fn: Callable, facts: Any, exp: Any, node: str | None, group: str
) -> list[Result]:
    """One check, made safe: its results get node (None: each keeps its own) and group; an
    exception becomes an error. Each result carries the check's seconds (Result.seconds)."""
    started = time.perf_counter()
    try:
        results = fn(facts, exp)
        if not isinstance(results, (list, tuple)) or not all(
            isinstance(r, Result) for r in results
        ):
            raise TypeError(f"returned {type(results).__name__}, not a list of Result")
    except Exception as e:
        return [replace(_raised(check_id, e, node, group),
                        seconds=time.perf_counter() - started)]
    took = time.perf_counter() - started
    return [
        replace(
            r, check=r.check or check_id, node=r.node if node is None else node,
            group=r.group or group, seconds=r.seconds if r.seconds is not None else took,
        )
        for r in results
    ]


def _raised(check_id: str, e: Exception, node: str | None, group: str) -> Result:
    import traceback  # only for a check that raised

    where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
    return Result(
        check_id,
        Status.ERROR,
        f"check {check_id} raised {type(e).__name__}: {e}{at}",
        node=node or "",
        fix="a bug in the check: report it with this message",
        group=group,
    )


def run_checks(
    registry: Mapping[str, Callable[[Any, Any], list[Result]]],
    facts: Any,
    exp: Any,
    skip: Collection[str] = (),
    *,
    group: str,
    node: str | None = None,
    say_skipped: bool = True,
) -> list[Result]:
    """Every check of ``registry`` in order on ``facts``; one that ``skip`` names does not run
    and is said skipped where it stands (``say_skipped=False``: the caller says it once, as
    verify cluster does for the node checks it runs on every worker)."""
    out: list[Result] = []
    for check_id, fn in registry.items():
        if check_id in skip:
            if say_skipped:
                out.append(skipped(check_id, group, node or ""))
            continue
        out.extend(run_check(check_id, fn, facts, exp, node, group))
    return out
