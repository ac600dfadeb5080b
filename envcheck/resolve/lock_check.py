"""``envcheck build --check``: whether each recipe's locks exist and were built from its
current content, without solving."""

from __future__ import annotations

import functools
import os
import socket
import textwrap
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from envcheck.errors import StaleLock
from envcheck.inputs import open_input
from envcheck.lockfile.read import read_built_lock
from envcheck.lockfile.write import lock_paths
from envcheck.report import Report, Result, Status
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import is_local, resolve_channel


@functools.lru_cache(maxsize=None)
def _reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the channel's host opens (no data is fetched); asked once
    per run and channel, however many recipes name it."""
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


HEAD_BYTES = 64 << 10  # an explicit lock's header: its comments and @EXPLICIT, a few lines


def _head(path: Path, lines: int = 5) -> list[str]:
    """The first ``lines`` lines of a platform's explicit lock, opened by ``open_input`` (a
    FIFO or a device planted under that name is refused before it is read)."""
    with os.fdopen(open_input(path, "explicit lock"), "rb") as f:
        head = f.read(HEAD_BYTES)
    return head.decode("utf-8", "replace").splitlines()[:lines]


def check_one(recipe: Recipe, out: Path) -> Result:
    """Whether the recipe's lock exists and was built from this exact recipe content."""
    paths = lock_paths(out, recipe.name, recipe.platforms)
    check = f"lock {recipe.name}"
    problem = None
    if not paths["lock"].exists():
        problem = f"{paths['lock']} is missing"
    else:
        lock = read_built_lock(paths["lock"])
        if lock.recipe_hash != recipe.content_hash():
            problem = f"{paths['lock']} is stale: {recipe.path} changed since it was built"
        else:
            missing = [str(paths[p]) for p in recipe.platforms if not paths[p].exists()]
            if missing:
                problem = f"{', '.join(missing)} missing"
            else:
                want = f"# input_hash: {recipe.content_hash()}"
                stale = [str(paths[p]) for p in recipe.platforms if want not in _head(paths[p])]
                if stale:
                    problem = f"{', '.join(stale)} not written with {paths['lock'].name}"
    if problem is None:
        return Result(check, Status.PASS, f"{paths['lock']} is up to date", group="build")
    fix = f"envcheck build {recipe.path} --out {out}"
    unreachable = _unreachable(recipe)
    if unreachable:
        fix = (
            f"this machine cannot reach {', '.join(unreachable)}: build the lock on a machine "
            f"that reaches them ({fix}) and commit {out}/ (see envcheck docs build)"
        )
    return Result(check, Status.FAIL, problem, fix=fix, group="build")


def _unreachable(recipe: Recipe) -> list[str]:
    remote = [resolve_channel(c) for c in recipe.channels if not is_local(resolve_channel(c))]
    return [u for u in remote if not _reachable(u)]


def check_all(recipes: Sequence[Recipe], out: Path) -> Report:
    """``build --check``: the report when every lock is current, else StaleLock naming each."""
    results = tuple(check_one(r, out) for r in recipes)
    report = Report("envcheck build --check", results=results, environment={"out": str(out)})
    if report.status is Status.PASS:
        return report
    bad = [(recipe, r) for recipe, r in zip(recipes, results) if r.status is not Status.PASS]
    raise StaleLock(stale_message(bad, len(results), out))


def stale_message(bad: Sequence[tuple[Recipe, Result]], total: int, out: Path,
                  width: int = 100) -> str:
    """What ``build --check`` says of the locks that need a rebuild: one lock on one line;
    several each on its own line, then one fix for all (one build command, the channels this
    machine cannot reach named once), every line wrapped at ``width``."""
    if len(bad) == 1:
        result = bad[0][1]
        return f"1 of {total} locks need a rebuild: {result.message} (fix: {result.fix})"
    command = f"envcheck build {' '.join(str(recipe.path) for recipe, _ in bad)} --out {out}"
    far = list(dict.fromkeys(u for recipe, _ in bad for u in _unreachable(recipe)))
    fix = (f"fix: this machine cannot reach {', '.join(far)}; on a machine that reaches them: "
           f"{command}, then commit {out}/ (see envcheck docs build)" if far
           else f"fix: {command}")
    lines = [("", f"{len(bad)} of {total} locks need a rebuild:"),
             *(("  ", result.message) for _, result in bad), ("  ", fix)]
    # the indent is textwrap's, not the text's: a path wider than a line keeps it
    return "\n".join(wrapped for indent, line in lines for wrapped in textwrap.wrap(
        line, width, initial_indent=indent, subsequent_indent="      ",
        break_long_words=False, break_on_hyphens=False))
