"""Running a registry of judgements (pure functions of gathered facts): verify job's and verify
ray's. A skipped one is said once; one that raises becomes an error naming it, and the rest run.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Collection, Mapping
from typing import Any

from envcheck.report import Result, Status


def run_judgements(
    registry: Mapping[str, Callable[[Any, Any], list[Result]]],
    facts: Any,
    exp: Any,
    skip: Collection[str],
    group: str,
) -> list[Result]:
    out: list[Result] = []
    for name, fn in registry.items():
        if name in skip:  # --skip: said once, never silently absent
            out.append(Result(name, Status.SKIP, "skipped by --skip", group=group))
            continue
        try:
            out += fn(facts, exp)
        except Exception as e:
            where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
            at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
            out.append(Result(name, Status.ERROR, f"check {name} raised {type(e).__name__}: "
                              f"{e}{at}", fix="a bug in the check: report it with this message",
                              group=group))
    return out
