"""Checks from other packages: entry-point group `envcheck.checks`.

A plugin is an entry point whose object is a check, `(facts, expectations) -> list[Result]`:

    [project.entry-points."envcheck.checks"]
    my-check = "my_package.checks:check_something"

A plugin that does not load is reported as an `error` result naming it, never skipped.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable

from envcheck.record import frozen
from envcheck.report import Result, Status

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

GROUP = "envcheck.checks"


@frozen
class Plugin:
    name: str  # the entry point's name: the check id of its results when they give none
    target: str  # "module:function", for messages
    check: Callable


@frozen
class EntryPoint:
    name: str
    value: str  # "module:attr.attr", as written (extras in brackets are ignored)

    def load(self) -> Any:
        target = self.value.split("[", 1)[0].strip()
        module, _, attrs = target.partition(":")
        obj = importlib.import_module(module.strip())
        for attr in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, attr)
        return obj


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entry_points(group: str, path: list[str] | None = None) -> list[EntryPoint]:
    """One group's entry points, from the entry_points.txt of every distribution on sys.path,
    the first distribution of a name winning (importlib.metadata's reading, without
    importing it)."""
    out: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path if path is None else path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # missing, a file, a zip: no distribution directories to read
            continue
        for name in names:
            if name.endswith(".dist-info"):
                dist = name[: -len(".dist-info")].split("-", 1)[0]
            elif name.endswith(".egg-info"):
                dist = name[: -len(".egg-info")].split("-", 1)[0]
            else:
                continue
            key = _normalized(dist)
            if key in seen:
                continue
            seen.add(key)
            out += _group(os.path.join(entry or ".", name, "entry_points.txt"), group)
    return out


def _group(path: str, group: str) -> list[EntryPoint]:
    """The `[group]` section of one entry_points.txt (an INI file: `name = value` lines)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return []
    if group not in text:  # most distributions: no such section, nothing to split
        return []
    out, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            out.append(EntryPoint(name.strip(), value.strip()))
    return out


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
