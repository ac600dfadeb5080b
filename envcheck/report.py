"""Results, measurements and the one place that renders them: table, JSON, JUnit XML, exit code."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from envcheck.errors import ExitCode

SCHEMA = "envcheck.report/1"


class Status(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


@dataclass(frozen=True)
class Result:
    """One judgement: which check, on which node, what it found and how to fix it."""

    check: str
    status: Status
    message: str
    node: str = ""
    fix: str = ""
    group: str = ""  # section in the table ("node", "cluster", "smoke", a plugin's name)


@dataclass(frozen=True)
class Measurement:
    """A number with its unit, and where known a reference it is judged against."""

    name: str
    value: float
    unit: str
    node: str = ""
    reference: float | None = None
    verdict: str = ""  # empty when fine; else what is wrong and the fix
    baseline: float | None = None  # the same operation done bare, in the same run


@dataclass(frozen=True)
class Table:
    """A free-form section (for example the per-process version-skew matrix)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Report:
    title: str
    results: tuple[Result, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    tables: tuple[Table, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> Status:
        seen = {r.status for r in self.results}
        for s in (Status.ERROR, Status.FAIL, Status.WARN):
            if s in seen:
                return s
        return Status.PASS

    def exit_code(self) -> ExitCode:
        return {
            Status.PASS: ExitCode.OK,
            Status.WARN: ExitCode.WARN,
            Status.FAIL: ExitCode.FAIL,
            Status.ERROR: ExitCode.ERROR,
        }[self.status]

    def counts(self) -> dict[str, int]:
        c = Counter(r.status.value for r in self.results)
        return {s.value: c.get(s.value, 0) for s in Status}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "title": self.title,
            "status": self.status.value,
            "exit_code": int(self.exit_code()),
            "counts": self.counts(),
            "environment": dict(self.environment),
            "results": [
                {
                    "check": r.check,
                    "status": r.status.value,
                    "node": r.node,
                    "message": r.message,
                    "fix": r.fix,
                    "group": r.group,
                }
                for r in self.results
            ],
            "measurements": [asdict(m) for m in self.measurements],
            "tables": [
                {"title": t.title, "columns": list(t.columns), "rows": [list(r) for r in t.rows]}
                for t in self.tables
            ],
        }


def write_json(report: Report, path: Path) -> None:
    path.write_text(json.dumps(report.to_json(), indent=2) + "\n")


def to_junit(report: Report) -> ET.Element:
    """One testcase per result; fail -> <failure>, error -> <error>, skip -> <skipped>."""
    counts = report.counts()
    suite = ET.Element(
        "testsuite",
        name=report.title,
        tests=str(len(report.results)),
        failures=str(counts["fail"]),
        errors=str(counts["error"]),
        skipped=str(counts["skip"]),
    )
    for r in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"envcheck.{r.group or 'checks'}",
            name=f"{r.check}[{r.node}]" if r.node else r.check,
        )
        text = r.message + (f"\nfix: {r.fix}" if r.fix else "")
        if r.status is Status.FAIL:
            ET.SubElement(case, "failure", message=r.message).text = text
        elif r.status is Status.ERROR:
            ET.SubElement(case, "error", message=r.message).text = text
        elif r.status is Status.SKIP:
            ET.SubElement(case, "skipped", message=r.message)
        else:
            ET.SubElement(case, "system-out").text = text
    for m in report.measurements:
        ET.SubElement(
            suite, "property", name=f"{m.name}[{m.node}]", value=f"{m.value:.6g} {m.unit}"
        )
    root = ET.Element("testsuites")
    root.append(suite)
    return root


def write_junit(report: Report, path: Path) -> None:
    tree = ET.ElementTree(to_junit(report))
    if hasattr(ET, "indent"):  # Python 3.9+; 3.8 writes the same XML unindented
        ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


_STYLE = {
    Status.PASS: "green",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.SKIP: "dim",
    Status.ERROR: "bold magenta",
}


def render_table(report: Report, console: Any = None) -> None:
    """Print the report for people: results grouped, measurements, extra tables, a summary."""
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    # Text, not markup: messages and fixes quote commands ("pip install 'envcheck[gpu]'")
    # whose brackets rich would otherwise take for style tags and drop
    console = console or Console()
    groups: dict[str, list[Result]] = {}
    for r in report.results:
        groups.setdefault(r.group or "checks", []).append(r)
    for group, results in groups.items():
        t = RichTable(title=f"{report.title}: {group}", title_justify="left", expand=False)
        for col in ("status", "check", "node", "message", "fix"):
            t.add_column(col, overflow="fold")
        for r in results:
            t.add_row(
                f"[{_STYLE[r.status]}]{r.status.value}[/]",
                *(Text(x) for x in (r.check, r.node, r.message, r.fix)),
            )
        console.print(t)
    for extra in report.tables:
        t = RichTable(title=extra.title, title_justify="left")
        for col in extra.columns:
            t.add_column(col, overflow="fold")
        for row in extra.rows:
            t.add_row(*(Text(str(x)) for x in row))
        console.print(t)
    if report.measurements:
        t = RichTable(title=f"{report.title}: measurements", title_justify="left")
        for col in ("name", "node", "value", "bare", "reference", "verdict"):
            t.add_column(col, overflow="fold")
        for m in report.measurements:
            t.add_row(
                m.name,
                m.node,
                f"{m.value:.4g} {m.unit}",
                "" if m.baseline is None else f"{m.baseline:.4g} {m.unit}",
                "" if m.reference is None else f"{m.reference:.4g} {m.unit}",
                Text(m.verdict),
            )
        console.print(t)
    c = report.counts()
    summary = ", ".join(f"{n} {s}" for s, n in c.items() if n)
    console.print(
        f"[{_STYLE[report.status]}]{report.status.value.upper()}[/]: {summary or 'no results'}"
        f" (exit {int(report.exit_code())})"
    )
