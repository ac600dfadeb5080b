"""envcheck install LOCK --prefix DIR: an environment from a lock, every hash checked first."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from envcheck.errors import BadInput, ExitCode
from envcheck.flags import seconds


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


def run(args: argparse.Namespace) -> int:
    require_install_extra()
    if args.fetch_timeout <= 0:
        raise BadInput(f"--fetch-timeout must be positive (got {args.fetch_timeout:g})")
    from rich.console import Console

    from envcheck.provision.install import default_cache, install
    from envcheck.provision.plan import read_plan

    console = Console(stderr=True)
    plan = read_plan(args.lock, args.platform)
    show = not args.quiet and sys.stderr.isatty()
    fetch_bar = link_bar = None
    if show:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        files = len(plan.conda) + len(plan.pip)
        fetch_bar = Progress(
            TextColumn(f"fetch + check {files} files"),
            BarColumn(),
            DownloadColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        fetch_task = fetch_bar.add_task("fetch", total=None)
        link_bar = Progress(
            TextColumn("link"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        link_task = link_bar.add_task("link", total=len(plan.conda))

    def on_fetch(n: int) -> None:
        if fetch_bar is not None:
            fetch_bar.advance(fetch_task, n)

    def before_link() -> None:
        if fetch_bar is not None and link_bar is not None:
            fetch_bar.stop()
            link_bar.start()

    if fetch_bar is not None:
        fetch_bar.start()
    try:
        outcome = install(
            plan,
            args.prefix,
            args.cache_dir or default_cache(),
            force=args.force,
            on_fetch=on_fetch,
            reporter=_LinkReporter(link_bar, link_task) if link_bar is not None else None,
            before_link=before_link,
            lock_timeout=args.lock_timeout,
            fetch_timeout=args.fetch_timeout,
        )
    finally:
        for bar in (fetch_bar, link_bar):
            if bar is not None:
                bar.stop()
    if outcome.noop:
        print(
            f"{outcome.prefix} is already installed from {plan.lock} "
            f"(lock sha256 {plan.lock_sha256[:12]}, {plan.platform}): nothing to do",
        )
        return int(ExitCode.OK)
    pip = f" + {outcome.pip} pip" if outcome.pip else ""
    print(
        f"installed {outcome.conda} conda{pip} packages into {outcome.prefix} "
        f"({_mb(outcome.bytes_total)}, {_mb(outcome.bytes_fetched)} downloaded, "
        f"{outcome.seconds:.1f} s; lock sha256 {plan.lock_sha256[:12]}, {plan.platform})",
    )
    return int(ExitCode.OK)
