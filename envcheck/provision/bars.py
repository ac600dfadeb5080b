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
        self.reporter = LinkReporter(self.link, self.link.add_task("link", total=links))

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
