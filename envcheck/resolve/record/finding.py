"""What the RAPIDS release record lint finds: a rule, a severity, the entries and sources."""

from __future__ import annotations

from dataclasses import dataclass

ERROR, WARN, INFO = "error", "warn", "info"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # error / warn / info
    message: str
    entries: tuple[str, ...] = ()  # the recipe entries it is about
    sources: tuple[str, ...] = ()  # record pointers: path:line

    def line(self) -> str:
        src = f" [{', '.join(self.sources)}]" if self.sources else ""
        return f"{self.rule}: {self.message}{src}"
