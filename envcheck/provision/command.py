"""envcheck install LOCK --prefix DIR: an environment from a lock, every hash checked first."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.flags import seconds
from envcheck.record import frozen

# typing and the report are imported once the linker child is forked (install_lock)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from envcheck.report import Report


@frozen
class InstallOptions:
    """What one install does; ``envcheck install``'s flags, typed."""

    lock: Path
    prefix: Path
    platform: str | None = None  # default: this machine's
    cache_dir: Path | None = None  # default: $ENVCHECK_CACHE, else ~/.cache/envcheck
    force: bool = False  # install even when the prefix's stamp matches
    progress: bool = False  # progress bars on stderr
    lock_timeout: float = 600.0  # wait this long for another install into the prefix (0: none)
    fetch_timeout: float = 900.0  # each package's download, all tries together


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("lock", type=Path, metavar="LOCK", help="a conda-lock file or a pixi.lock")
    p.add_argument("--prefix", type=Path, required=True, help="the environment to create")
    p.add_argument("--platform", help="the lock's platform to install (default: this machine's)")
    p.add_argument(
        "--cache-dir",
        type=Path,
        help="staging cache for checked packages ($ENVCHECK_CACHE, else ~/.cache/envcheck)",
    )
    p.add_argument(
        "--force", action="store_true", help="install even when the prefix's stamp matches"
    )
    p.add_argument(
        "--lock-timeout",
        type=seconds,
        default=600.0,
        metavar="S",
        help="wait this long for another install into the same prefix (0: fail at once; "
        "default 600)",
    )
    p.add_argument(
        "--fetch-timeout",
        type=seconds,
        default=900.0,
        metavar="S",
        help="deadline for each package's download, all tries together (default 900)",
    )


class _LinkReporter:
    """py-rattler's installer callbacks -> one rich progress task (packages linked)."""

    def __init__(self, progress, task) -> None:  # noqa: ANN001
        self.progress, self.task = progress, task

    def on_link_complete(self, index: int) -> None:
        self.progress.advance(self.task)

    def __getattr__(self, name: str):  # noqa: ANN204 - every other callback: no-op
        if name.startswith("on_"):
            return lambda *a, **k: 0
        raise AttributeError(name)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def require_install_extra() -> None:
    """BadInput (one line) when this interpreter cannot run `envcheck install`."""
    if sys.version_info < (3, 10):
        raise BadInput(
            f"envcheck install needs Python >= 3.10 (this is {sys.version.split()[0]}); "
            "the env it creates may have any Python"
        )
    missing = [m for m in ("rattler", "uv") if importlib.util.find_spec(m) is None]
    if missing:
        raise BadInput(
            f"envcheck install needs the install extra (missing: {', '.join(missing)}): "
            "pip install 'envcheck[install]'"
        )


def options_from_args(args: argparse.Namespace) -> InstallOptions:
    return InstallOptions(
        lock=args.lock,
        prefix=args.prefix,
        platform=args.platform,
        cache_dir=args.cache_dir,
        force=args.force,
        progress=not args.quiet and sys.stderr.isatty(),
        lock_timeout=args.lock_timeout,
        fetch_timeout=args.fetch_timeout,
    )


def run(args: argparse.Namespace) -> Report:
    return install_lock(options_from_args(args))


class _Bars:
    """The fetch bar, then the link bar, on stderr; every method a no-op when hidden."""

    def __init__(self, files: int, links: int, show: bool) -> None:
        self.fetch: Any = None
        self.link: Any = None
        self.reporter: Any = None
        if not show:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True)
        self.fetch = Progress(
            TextColumn(f"fetch + check {files} files"), BarColumn(), DownloadColumn(),
            TimeElapsedColumn(), console=console, transient=True,
        )  # fmt: skip
        self.fetch_task = self.fetch.add_task("fetch", total=None)
        self.link = Progress(
            TextColumn("link"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True,
        )  # fmt: skip
        self.reporter = _LinkReporter(self.link, self.link.add_task("link", total=links))

    def on_fetch(self, n: int) -> None:
        if self.fetch is not None:
            self.fetch.advance(self.fetch_task, n)

    def before_link(self) -> None:
        if self.fetch is not None:
            self.fetch.stop()
            self.link.start()

    @contextmanager
    def shown(self) -> Iterator[None]:
        if self.fetch is not None:
            self.fetch.start()
        try:
            yield
        finally:
            for bar in (self.fetch, self.link):
                if bar is not None:
                    bar.stop()


def default_cache() -> Path:
    """$ENVCHECK_CACHE, else $XDG_CACHE_HOME/envcheck, else ~/.cache/envcheck."""
    env = os.environ.get("ENVCHECK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck"


def install_lock(opts: InstallOptions) -> Report:
    """Create ``opts.prefix`` from the lock, every package's hash checked before it links."""
    require_install_extra()
    if opts.fetch_timeout <= 0:
        raise BadInput(f"--fetch-timeout must be positive (got {opts.fetch_timeout:g})")
    from envcheck.provision import linker

    cache = opts.cache_dir or default_cache()
    # py-rattler starts and reads the lock in the linker child while the imports below run
    linker.prestart(opts.lock, opts.platform, cache)
    try:
        return _install(opts, cache)
    finally:
        linker.discard_prestarted()


def _archive_names(lock: Path) -> list[str]:
    """The conda archives' file names the lock's text seems to name (conda-lock's ``url:``,
    pixi's ``conda:`` lines): a guess, for the walk ahead only; the plan comes from py-rattler's
    reading. Nothing for a file that is not one to read (the reading says why)."""
    import re

    from envcheck.inputs import MAX_LOCK_BYTES, read_bytes

    try:
        text = read_bytes(lock, "lock", MAX_LOCK_BYTES).decode(errors="replace")
    except BadInput:
        return []
    urls = re.findall(r"^\s*-?\s*(?:url|conda): (\S+?\.(?:conda|tar\.bz2))\s*$", text, re.M)
    return [u.rsplit("/", 1)[-1] for u in urls]


def _install(opts: InstallOptions, cache: Path) -> Report:
    from envcheck.provision import linker, unpacked
    from envcheck.provision.install import install
    from envcheck.provision.plan import plan_of, read_plan
    from envcheck.report import Report, Result, Status

    walked = None
    if linker.reading_pending():  # meanwhile, the cache's folders the lock seems to name
        walked = unpacked.walk_ahead(cache, _archive_names(opts.lock))
    # the lock as the linker child read it (py-rattler is imported there, not here), else here
    reading = linker.prestarted_reading()
    plan = read_plan(opts.lock, opts.platform) if reading is None else plan_of(opts.lock, reading)
    bars = _Bars(len(plan.conda) + len(plan.pip), len(plan.conda), opts.progress)
    with bars.shown():
        outcome = install(
            plan,
            opts.prefix,
            cache,
            force=opts.force,
            on_fetch=bars.on_fetch,
            reporter=bars.reporter,
            before_link=bars.before_link,
            lock_timeout=opts.lock_timeout,
            fetch_timeout=opts.fetch_timeout,
            walked=walked,
        )
    lock = f"lock sha256 {plan.lock_sha256[:12]}, {plan.platform}"
    if outcome.noop:
        message = f"{outcome.prefix} is already installed from {plan.lock} ({lock}): nothing to do"
    else:
        pip = f" + {outcome.pip} pip" if outcome.pip else ""
        message = (
            f"installed {outcome.conda} conda{pip} packages into {outcome.prefix} "
            f"({_mb(outcome.bytes_total)}, {_mb(outcome.bytes_fetched)} downloaded, "
            f"{outcome.seconds:.1f} s; {lock})"
        )
    result = Result("install", Status.PASS, message, node=plan.platform, group="install")
    env = {"lock": str(plan.lock), "lock sha256": plan.lock_sha256, "prefix": str(outcome.prefix)}
    # the one line is what a person or a script reads; the result carries it to --json/--junit
    return Report("envcheck install", results=(result,), environment=env, output=message + "\n")
