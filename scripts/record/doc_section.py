"""A part of a doc that a script writes: the text between two marker lines, replaced by the
script's rendering, or with `--check` compared with it (exit 1 when they differ)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    doc: Path
    begin: str  # the marker lines, kept in the doc around the rendering
    end: str
    what: str  # what the rendering is, for the script's one line ("the rule table")

    def replaced(self, doc: str, text: str) -> str:
        """``doc`` with its part from the begin marker to the end marker replaced by ``text``."""
        start, end = doc.index(self.begin), doc.index(self.end) + len(self.end)
        return doc[:start] + text + doc[end:]

    def main(self, prog: str, render: Callable[[], str], argv: list[str] | None = None,
             description: str | None = None) -> int:
        """Write ``render()`` into the doc, or with --check say whether the doc holds it."""
        p = argparse.ArgumentParser(prog=prog, description=description)
        p.add_argument("--check", action="store_true", help=f"exit 1 if {self.doc.name} differs")
        args = p.parse_args(argv)
        doc = self.doc.read_text()
        new = self.replaced(doc, render())
        if args.check:
            print(f"{self.doc}: {'up to date' if new == doc else f'differs from {self.what}'}")
            return 0 if new == doc else 1
        self.doc.write_text(new)
        print(f"wrote {self.what} into {self.doc}")
        return 0
