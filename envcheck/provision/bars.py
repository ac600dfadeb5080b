"""The install's progress on stderr: the fetch bar, then the link bar (rich)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class LinkReporter:
    """py-rattler's installer callbacks -> one rich progress task (packages linked)."""

    def __init__(self, progress, task) -> None:  # noqa: ANN001
        self.progress, self.task = progress, task

    def on_link_complete(self, index: int) -> None:
        self.progress.advance(self.task)

    def __getattr__(self, name: str):  # noqa: ANN204 - every other callback: no-op
        if name.startswith("on_"):
            return lambda *a, **k: 0
        raise AttributeError(name)


class Bars:
    """The fetch bar, then the link bar, on stderr; every method a no-op when hidden.

    The fetch bar's total is the lock's file count (a conda-lock file states no sizes): it
    reads `fetch + check ━━━━ 42/161 files 14.2 MB`, the bytes so far beside it."""

    def __init__(self, files: int, links: int, show: bool) -> None:
        self.fetch: Any = None
        self.link: Any = None
        self.reporter: Any = None
        self.bytes = 0
        if not show:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True)
        self.fetch = Progress(
            TextColumn("fetch + check"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
            TextColumn("{task.fields[mb]}"), TimeElapsedColumn(), console=console,
            transient=True,
        )  # fmt: skip
        self.fetch_task = self.fetch.add_task("fetch", total=files, mb=_mb(0))
        self.link = Progress(
            TextColumn("link"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True,
        )  # fmt: skip
        self.reporter = LinkReporter(self.link, self.link.add_task("link", total=links))

    def on_fetch(self, n: int) -> None:
        """Bytes fetched (negative: a retry starts the file again)."""
        self.bytes += n
        if self.fetch is not None:
            self.fetch.update(self.fetch_task, mb=_mb(self.bytes))

    def on_checked(self) -> None:
        """One more file whose hash matched."""
        if self.fetch is not None:
            self.fetch.advance(self.fetch_task)

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


def _mb(n: int) -> str:
    return f"{max(n, 0) / 1e6:.1f} MB"
