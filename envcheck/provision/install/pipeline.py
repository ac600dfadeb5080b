"""`envcheck install`: InstallOptions -> Report. The one place that runs the install's stages,
in order; options.py holds what it is asked, command.py the flags.

1. the plan (``read_plan``): the lock read for one platform, every package's hash present;
2. the prefix (prefix.py): checked writable (as root: not where another user can rename
   what is built, unless allowed), its lock taken (one install per prefix), what a dead
   install of this user left beside it undone; nothing more to do when its stamp matches;
3. the archives: every conda package and pip wheel fetched into the cache, its sha256/md5
   checked (fetch.py);
4. the unpacked packages, under the cache lock: each checked archive unpacked (linker child)
   or its unpacked tree checked against its marker, its metadata checked (unpacked.py);
5. the staging tree, in a private directory beside the prefix (prefix.staged, staging.py):
   the records linked into it for the final path (linker child: py-rattler may abort), the
   pip wheels installed (pip_part.py), the unpacked packages' markers renewed;
6. the swap (prefix.staged): the stamp written, signals held from here, the staging tree
   renamed into place, the old env removed.
Each stage takes the previous one's output, so that a prefix is either the old env or the
complete new one, never a mix: any failure or signal before stage 6 removes the staging tree,
and the prefix is as it was. The progress line (``Bars``) shows stages 3 and 5 on a terminal.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput
from envcheck.lockfile.read import read_lock_records
from envcheck.provision import linker, pip_part, unpacked
from envcheck.provision.fetch import DEADLINE_S as FETCH_DEADLINE_S
from envcheck.provision.fetch import fetch_all
from envcheck.provision.install.options import InstallOptions
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
from envcheck.report import Report, Result, Status
from envcheck.text import say as terminal_say

LOCK_TIMEOUT_S = 600.0  # how long an install waits for another one into the same prefix

# --- the verb: options in, one Report out -----------------------------------------------------


def require_install_extra() -> None:
    """BadInput (one line) when this interpreter cannot run `envcheck install`."""
    if sys.version_info < (3, 10):
        raise BadInput(
            f"envcheck install needs Python >= 3.10 (this is {sys.version.split()[0]}); "
            "the env it creates may have any Python"
        )
    from envcheck.distribution import extra_hint

    missing = [m for m in ("rattler", "uv") if importlib.util.find_spec(m) is None]
    if missing:
        raise BadInput(
            f"envcheck install needs the install extra (missing: {', '.join(missing)}): "
            f"{extra_hint('install')}"
        )


def install_lock(opts: InstallOptions) -> Report:
    """Create ``opts.prefix`` from the lock, every package's hash checked before it links; one
    result and one line (what a person or a script reads; --json/--junit carry it)."""
    require_install_extra()
    plan = read_plan(opts.lock, opts.platform)
    bars = Bars(len(plan.conda) + len(plan.pip), len(plan.conda), opts.progress)
    with bars.shown():
        outcome = install(
            plan,
            opts.prefix,
            opts.cache,
            force=opts.force,
            bars=bars,
            lock_timeout=opts.lock_timeout,
            fetch_timeout=opts.fetch_timeout,
            allow_shared_parent=opts.allow_shared_parent,
        )
    lock = f"lock sha256 {plan.lock_sha256[:12]}, {plan.platform}"
    if outcome.noop:
        message = f"{outcome.prefix} is already installed from {plan.lock} ({lock}): nothing to do"
    else:
        pip = f" + {outcome.pip} pip" if outcome.pip else ""
        message = (
            f"installed {outcome.conda} conda{pip} packages into {outcome.prefix} "
            f"({outcome.bytes_total / 1e6:.1f} MB, {outcome.bytes_fetched / 1e6:.1f} MB "
            f"downloaded, {outcome.seconds:.1f} s; {lock})"
        )
    result = Result("install", Status.PASS, message, node=plan.platform, group="install")
    env = {"lock": str(plan.lock), "lock sha256": plan.lock_sha256, "prefix": str(outcome.prefix)}
    return Report("envcheck install", results=(result,), environment=env, output=message + "\n")


# --- stage 1, the plan: the lock read for one platform ---------------------------------------


def read_plan(lock: Path, platform: str | None) -> Plan:
    """Read a conda-lock file or a pixi.lock (py-rattler reads both) for ``platform``.

    ``platform`` defaults to this machine's. BadInput when the lock is missing, unreadable,
    lacks the platform (naming the ones it has), lists a package twice (naming both records),
    or has a package without a hash to check.
    """
    read = read_lock_records(lock, platform)
    for p in read.packages:
        if not p.sha256 and not p.md5:
            raise BadInput(f"{lock}: {p.manager} package {p.name} {p.version} has no hash to check")
        if p.manager == "pip" and not p.sha256:
            raise BadInput(f"{lock}: pip package {p.name} {p.version} has no sha256")
    return Plan(
        lock,
        read.sha256,
        read.platform,
        read.records,
        conda=tuple(p for p in read.packages if p.manager == "conda"),
        pip=tuple(p for p in read.packages if p.manager == "pip"),
        sizes={
            str(r.url): size
            for r in read.records
            if isinstance(size := getattr(r, "size", None), int) and size > 0
        },
    )


# --- stages 2-6: the plan installed into the prefix ------------------------------------------


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
    bars: Bars | None = None,
    lock_timeout: float = LOCK_TIMEOUT_S,
    fetch_timeout: float = FETCH_DEADLINE_S,
    say: Callable[[str], None] = _say,
    allow_shared_parent: bool = False,
) -> Outcome:
    """Stages 2-6 of the module docstring, in order: ``prefix`` made the env of ``plan``, the
    archives fetched into ``cache``, the progress on ``bars`` (None: none shown); raises
    EnvcheckError subclasses."""
    start = time.perf_counter()
    bars = bars if bars is not None else Bars(0, 0, show=False)
    target = resolved(prefix)
    # relative to the working directory, as any path given; the linker needs file:// URLs
    cache = Path(os.path.abspath(cache))
    with claimed(target, plan, force, lock_timeout, say, allow_shared_parent) as needed:
        if not needed:
            return Outcome(target, plan, noop=True, seconds=time.perf_counter() - start)
        with linker.Linker(plan, cache) as child:  # forked now, while envcheck has no threads
            fetched = fetch_all(
                [*plan.conda, *plan.pip], cache, bars.on_fetch, deadline=fetch_timeout,
                sizes=plan.sizes, checked=bars.on_checked,
            )
            conda = [(f.artifact, f.path) for f in fetched if f.artifact.manager == "conda"]
            pip = [f for f in fetched if f.artifact.manager == "pip"]
            on_linked = [] if bars.reporter is None else [bars.reporter.on_link_complete]
            locked = hold(cache_lock_path(cache), f"cache {cache}", lock_timeout, say)
            with locked, one_line_errors(target), staged(target, plan) as stage, \
                    unpacked.verified(conda, cache, child.extract) as renewal:
                bars.before_link()
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


# --- progress: fetch, then link, on one line of stderr (envcheck.progress) -----------------


class LinkReporter:
    """py-rattler's installer callbacks -> the link count on the progress line."""

    def __init__(self, bars: Bars) -> None:
        self.bars = bars

    def on_link_complete(self, index: int) -> None:
        self.bars.linked += 1
        self.bars.line.tick(f"link {self.bars.linked}/{self.bars.links} packages "
                           f"{_elapsed(self.bars.start)}")

    def __getattr__(self, name: str):  # noqa: ANN204 - every other callback: no-op
        if name.startswith("on_"):
            return lambda *a, **k: 0
        raise AttributeError(name)


class Bars:
    """Stages 3 and 5 on the progress line: `fetch + check 42/161 files 14.2 MB 3 s`, then
    `link 12/140 packages 5 s`; nothing at all when hidden (a pipe, --quiet, --json -).

    The fetch count's total is the lock's file count (a conda-lock file states no sizes), the
    bytes so far beside it."""

    def __init__(self, files: int, links: int, show: bool) -> None:
        from envcheck.progress import Line

        self.show, self.line = show, Line(show=False)  # drawn from ``shown`` on
        self.files, self.links = files, links
        self.bytes = self.checked = self.linked = 0
        self.start = time.monotonic()
        self.reporter: Any = LinkReporter(self) if show else None

    def _fetch_line(self) -> None:
        self.line.tick(f"fetch + check {self.checked}/{self.files} files {_mb(self.bytes)} "
                      f"{_elapsed(self.start)}")

    def on_fetch(self, n: int) -> None:
        """Bytes fetched (negative: a retry starts the file again)."""
        self.bytes += n
        self._fetch_line()

    def on_checked(self) -> None:
        """One more file whose hash matched."""
        self.checked += 1
        self._fetch_line()

    def before_link(self) -> None:
        self.line.say(f"link 0/{self.links} packages {_elapsed(self.start)}")

    @contextmanager
    def shown(self) -> Iterator[None]:
        from envcheck.progress import step

        with step(f"fetch + check 0/{self.files} files", show=self.show) as self.line:
            yield


def _mb(n: int) -> str:
    return f"{max(n, 0) / 1e6:.1f} MB"


def _elapsed(start: float) -> str:
    return f"{time.monotonic() - start:.0f} s"
