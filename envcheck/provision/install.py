"""Create an environment from a plan: every package fetched and checked, the new env linked
beside the prefix and renamed into place.

A chain of stages, each taking the previous one's output, so that a prefix is either the old
env or the complete new one, never a mix:
1. the prefix (prefix.py): checked writable, its lock taken (one install per prefix), what a
   dead install left beside it undone; nothing more to do when its stamp matches the plan;
2. the archives: every conda package and pip wheel fetched into the cache, its sha256/md5
   checked (fetch.py);
3. the unpacked packages, under the cache lock: each checked archive unpacked (linker child)
   or its unpacked tree checked against its marker, its metadata checked (unpacked.py);
4. the staging tree beside the prefix (prefix.staged): the records linked into it for the
   final path (linker child: py-rattler may abort), the pip wheels installed (pip_part.py),
   the unpacked packages' markers renewed;
5. the swap (prefix.staged): the stamp written, signals held from here, the staging tree
   renamed into place, the old env removed.
Any failure or signal before step 5 removes the staging tree: the prefix is as it was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from envcheck.provision import linker, pip_part, unpacked
from envcheck.provision.fetch import DEADLINE_S as FETCH_DEADLINE_S
from envcheck.provision.fetch import fetch_all
from envcheck.provision.plan import Plan
from envcheck.provision.prefix import (
    cache_lock_path,
    claimed,
    hold,
    one_line_errors,
    resolved,
    staged,
)
from envcheck.record import frozen
from envcheck.text import say as terminal_say

LOCK_TIMEOUT_S = 600.0  # how long an install waits for another one into the same prefix


@frozen
class Outcome:
    prefix: Path
    plan: Plan
    noop: bool
    conda: int = 0
    pip: int = 0
    bytes_fetched: int = 0  # downloaded now
    bytes_total: int = 0  # every checked archive, cached or not
    seconds: float = 0.0


def _say(line: str) -> None:
    terminal_say(line, prefix="")


def install(
    plan: Plan,
    prefix: Path,
    cache: Path,
    *,
    force: bool = False,
    on_fetch: Callable[[int], None] = lambda n: None,
    on_checked: Callable[[], None] = lambda: None,
    reporter=None,  # noqa: ANN001 - an object with on_link_complete(index), or None
    before_link: Callable[[], None] = lambda: None,
    lock_timeout: float = LOCK_TIMEOUT_S,
    fetch_timeout: float = FETCH_DEADLINE_S,
    say: Callable[[str], None] = _say,
) -> Outcome:
    """Stages 1-5 of the module docstring, in order; raises EnvcheckError subclasses."""
    start = time.perf_counter()
    target = resolved(prefix)
    # relative to the working directory, as any path given; the linker needs file:// URLs
    cache = Path(os.path.abspath(cache))
    with claimed(target, plan, force, lock_timeout, say) as needed:
        if not needed:
            return Outcome(target, plan, noop=True, seconds=time.perf_counter() - start)
        with linker.Linker(plan, cache) as child:  # forked now, while envcheck has no threads
            fetched = fetch_all(
                [*plan.conda, *plan.pip], cache, on_fetch, deadline=fetch_timeout,
                sizes=plan.sizes, checked=on_checked,
            )  # fmt: skip
            conda = [(f.artifact, f.path) for f in fetched if f.artifact.manager == "conda"]
            pip = [f for f in fetched if f.artifact.manager == "pip"]
            on_linked = [] if reporter is None else [reporter.on_link_complete]
            locked = hold(cache_lock_path(cache), f"cache {cache}", lock_timeout, say)
            with locked, one_line_errors(target), staged(target, plan) as stage, \
                    unpacked.verified(conda, cache, child.extract) as renewal:  # fmt: skip
                before_link()
                archives = {a.url: str(path) for a, path in conda}
                child.link(stage, target, archives, [renewal.linked, *on_linked])
                pip_part.install(plan, pip, stage, target)
    return Outcome(
        target,
        plan,
        noop=False,
        conda=len(plan.conda),
        pip=len(plan.pip),
        bytes_fetched=sum(f.size for f in fetched if not f.cached),
        bytes_total=sum(f.size for f in fetched),
        seconds=time.perf_counter() - start,
    )
