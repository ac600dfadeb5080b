"""Checks from other packages: entry-point group `envcheck.checks`.

A plugin is an entry point whose object is a check, `(facts, expectations) -> list[Result]`:

    [project.entry-points."envcheck.checks"]
    my-check = "my_package.checks:check_something"

A plugin that does not load is reported as an `error` result naming it, never skipped.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass

from envcheck.report import Result, Status

GROUP = "envcheck.checks"


@dataclass(frozen=True)
class Plugin:
    name: str  # the entry point's name: the check id of its results when they give none
    target: str  # "module:function", for messages
    check: Callable


def entry_points(group: str) -> list:
    """importlib.metadata's entry points of one group, on Python 3.8 and 3.9 too (their
    entry_points() takes no group and returns a dict)."""
    found = importlib.metadata.entry_points()
    if hasattr(found, "select"):  # 3.10+
        return list(found.select(group=group))
    return list(found.get(group, ()))  # type: ignore[union-attr]


def load_plugins(group: str = GROUP) -> tuple[list[Plugin], list[Result]]:
    """The loadable plugins, and an error Result for each one that did not load."""
    plugins: list[Plugin] = []
    errors: list[Result] = []
    seen: set[str] = set()
    for ep in entry_points(group):
        if ep.name in seen:  # the same dist found twice on sys.path
            continue
        seen.add(ep.name)
        try:
            obj = ep.load()
        except Exception as e:
            errors.append(
                Result(
                    f"plugin:{ep.name}",
                    Status.ERROR,
                    f"plugin {ep.name} ({ep.value}) failed to load: {type(e).__name__}: {e}",
                    fix="fix or uninstall the package that declares this entry point",
                    group="plugins",
                )
            )
            continue
        if not callable(obj):
            errors.append(
                Result(
                    f"plugin:{ep.name}",
                    Status.ERROR,
                    f"plugin {ep.name} ({ep.value}) is a {type(obj).__name__}, "
                    "not a check function",
                    fix="point the entry point at a function (facts, expectations) -> list[Result]",
                    group="plugins",
                )
            )
            continue
        plugins.append(Plugin(ep.name, ep.value, obj))
    return plugins, errors
