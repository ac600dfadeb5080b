"""Results, measurements and the one place that renders them: table, JSON, JUnit XML, plain
columns (--list-checks), a Nagios line (verify node --nagios), exit code."""

from __future__ import annotations

from collections import Counter
from enum import Enum
from pathlib import Path

from envcheck.errors import ExitCode
from envcheck.record import field, field_names, frozen, replace
from envcheck.text import printable, safe

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from envcheck.run_info import RunInfo

SCHEMA = "envcheck.report/1"


class Status(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


@frozen
class Result:
    """One judgement: which check, on which node, what it found and how to fix it."""

    check: str
    status: Status
    message: str
    node: str = ""
    fix: str = ""
    group: str = ""  # section in the table ("node", "cluster", "smoke", a plugin's name)
    seconds: float | None = None  # how long the check or smoke test took (None: not timed)

    def __post_init__(self) -> None:
        # a message quotes kernel logs, hostnames, file names: no control byte reaches a
        # terminal, a Nagios line or an XML parser raw (envcheck.text)
        _clean(self, "check", "message", "node", "fix", "group")


def _clean(obj: object, *names: str) -> None:
    """Each string field of ``obj`` named, as ``safe`` shows it: what a check quotes (a kernel
    log, a lock's fields, a URL with a password) reaches no renderer raw."""
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, str):
            shown = safe(value)
            if shown != value:
                object.__setattr__(obj, name, shown)


def _cleaned(value: object) -> object:
    return safe(value) if isinstance(value, str) else value


@frozen
class Measurement:
    """A number with its unit, and where known a reference it is judged against."""

    name: str
    value: float
    unit: str
    node: str = ""
    reference: float | None = None
    verdict: str = ""  # empty when fine; else what is wrong and the fix
    baseline: float | None = None  # the same operation done bare, in the same run

    def __post_init__(self) -> None:
        _clean(self, "name", "unit", "node", "verdict")


@frozen
class Table:
    """A free-form section (for example the per-process version-skew matrix)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        _clean(self, "title")
        object.__setattr__(self, "columns", tuple(map(_cleaned, self.columns)))
        object.__setattr__(self, "rows", tuple(tuple(map(_cleaned, r)) for r in self.rows))


@frozen
class Report:
    title: str
    results: tuple[Result, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    tables: tuple[Table, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    # the exit code when the results alone do not say it (an error's own code, exit 8)
    code: ExitCode | None = None
    # the verb's product printed as is in place of the table (a recipe, a script, markdown)
    output: str = ""
    # how it prints: "" the table (or ``output``); "nagios" one Nagios line (nagios_text)
    form: str = ""
    # False: the command line prints and writes nothing for it, only exits with its code (a
    # verify job rank other than 0: rank 0 prints the job's report)
    shown: bool = True
    # when and what ran (envcheck.run_info); the command line stamps it, a report written
    # without one is stamped as it is written
    run: RunInfo | None = None
    # node label (a worker's address, a rank) -> its host, for the text report to name the
    # host beside the node (the results keep the label alone; JSON as it is)
    hosts: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _clean(self, "title")
        if any(safe(str(k)) != k or _cleaned(v) != v for k, v in self.environment.items()):
            object.__setattr__(self, "environment", {safe(str(k)): _cleaned(v)
                                                     for k, v in self.environment.items()})
        if printable(self.output) != self.output:  # the product: escaped, never redacted
            object.__setattr__(self, "output", printable(self.output))

    @property
    def status(self) -> Status:
        seen = {r.status for r in self.results}
        for s in (Status.ERROR, Status.FAIL, Status.WARN):
            if s in seen:
                return s
        return Status.PASS

    @property
    def exit_code(self) -> ExitCode:
        if self.code is not None:
            return self.code
        return {
            Status.PASS: ExitCode.OK,
            Status.WARN: ExitCode.WARN,
            Status.FAIL: ExitCode.FAIL,
            Status.ERROR: ExitCode.ERROR,
        }[self.status]

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(r.status.value for r in self.results)
        return {s.value: c.get(s.value, 0) for s in Status}

    def __repr__(self) -> str:
        listed = ", ".join(f"{n} {s}" for s, n in self.counts.items() if n) or "no results"
        return f"<Report {self.title!r} {self.status.value}: {listed}, exit {int(self.exit_code)}>"

    def to_json(self) -> dict[str, Any]:
        from envcheck.run_info import run_of

        return {
            "schema": SCHEMA,
            "title": self.title,
            "run": run_of(self).to_json(),
            "status": self.status.value,
            "exit_code": int(self.exit_code),
            "counts": self.counts,
            "environment": dict(self.environment),
            "results": [
                {
                    "check": r.check,
                    "status": r.status.value,
                    "node": r.node,
                    "message": r.message,
                    "fix": r.fix,
                    "group": r.group,
                    "seconds": None if r.seconds is None else round(r.seconds, 4),
                }
                for r in self.results
            ],
            "measurements": [
                {n: getattr(m, n) for n in field_names(Measurement)} for m in self.measurements
            ],
            "tables": [
                {"title": t.title, "columns": list(t.columns), "rows": [list(r) for r in t.rows]}
                for t in self.tables
            ],
            **({"output": self.output} if self.output else {}),
        }

    def _repr_html_(self) -> str:
        """Jupyter shows a Report as a table (``envcheck.verify_cluster(client)`` in a cell)."""
        from envcheck.report_html import to_html

        return to_html(self)


def error_report(
    title: str, message: str, code: ExitCode, check: str = "", tables: tuple[Table, ...] = ()
) -> Report:
    """The report of a run that failed as a whole: one error result, the failure's exit code,
    and the tables the run had made before it failed."""
    result = Result(check or title, Status.ERROR, message, group="error")
    return Report(title, results=(result,), tables=tables, code=code)


def write_json(report: Report, path: Path) -> None:
    import json

    from envcheck.destinations import write_file

    write_file(path, (json.dumps(report.to_json(), indent=2) + "\n").encode(), f"--json {path}")


def to_junit(report: Report) -> Any:
    """One testcase per result; fail -> <failure>, error -> <error>, skip -> <skipped>
    (an ElementTree element: xml.etree is imported here, not on every start)."""
    import xml.etree.ElementTree as ET

    from envcheck.run_info import run_of

    counts = report.counts
    run = run_of(report)
    suite = ET.Element(
        "testsuite",
        name=printable(report.title),
        tests=str(len(report.results)),
        failures=str(counts["fail"]),
        errors=str(counts["error"]),
        skipped=str(counts["skip"]),
        timestamp=run.time,
        hostname=printable(run.host),
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("envcheck.version", run.envcheck), ("envcheck.host", run.host),
                       ("envcheck.time", run.time), ("envcheck.argv", run.command)):
        ET.SubElement(props, "property", name=key, value=printable(value))
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
            props,
            "property",
            name=printable(f"{m.name}[{m.node}]"),
            value=printable(f"{m.value:.6g} {m.unit}"),
        )
    for t in report.tables:  # one property per row: "title[n]" -> "col: value; ..."
        for n, row in enumerate(t.rows):
            value = "; ".join(f"{c}: {v}" for c, v in zip(t.columns, row))
            ET.SubElement(props, "property", name=printable(f"{t.title}[{n}]"),
                          value=printable(value))
    root = ET.Element("testsuites")
    root.append(suite)
    return root


def write_junit(report: Report, path: Path) -> None:
    import xml.etree.ElementTree as ET

    from envcheck.destinations import write_file

    tree = ET.ElementTree(to_junit(report))
    if hasattr(ET, "indent"):  # Python 3.9+; 3.8 writes the same XML unindented
        ET.indent(tree)
    data = ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True)
    write_file(path, data + b"\n", f"--junit {path}")


def write_html(report: Report, path: Path) -> None:
    from envcheck.destinations import write_file
    from envcheck.report_html import page

    write_file(path, page(report).encode(), f"--html {path}")


def render_table(report: Report, console: Any = None, verbose: bool = False,
                 measurements: bool = False) -> None:
    """Print the report for people, the verdict first (envcheck.report_text); the JSON and
    JUnit reports keep every row."""
    from envcheck.report_text import render

    render(report, console, verbose=verbose, measurements=measurements)


def columns_text(table: Table) -> str:
    """A Table as plain aligned columns, its header first (``--list-checks``); the last column
    runs on unpadded."""
    rows = [table.columns, *table.rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.columns) - 1)]
    return "".join(
        "  ".join([*(f"{c:<{w}}" for c, w in zip(r, widths)), r[-1]]).rstrip() + "\n"
        for r in rows
    )


# --- Nagios: one line per node and Nagios's exit codes, for Slurm prologs, NHC and monitoring.
#     ENVCHECK CRITICAL - gpu-node-1: 2 fail, 1 warn: gpus: expected 8 GPUs, NVML sees 7; ...
#         | pass=11 warn=1 fail=2 error=0 skip=3     (one line in fact; wrapped here)
# 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN: the codes NHC, gcm and Nagios plugins use, and the
# same numbers as envcheck's own OK/WARN/FAIL/ERROR. Anything that stops the check itself (bad
# flags, unreadable lock) is UNKNOWN (3), never a traceback or another code.

NAGIOS_STATES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}
_NAGIOS_CODE = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2, Status.ERROR: 3}
NAGIOS_LIMIT = 400  # characters of detail: prolog logs and NHC keep one short line


def nagios_line(report: Report, node: str) -> tuple[str, int]:
    """(the line, its exit code) for one node's report."""
    code = _NAGIOS_CODE[report.status]
    counts = report.counts
    worst = [r for r in report.results if r.status in (Status.ERROR, Status.FAIL)] or [
        r for r in report.results if r.status is Status.WARN
    ]
    summary = ", ".join(f"{counts[s]} {s}" for s in ("error", "fail", "warn") if counts[s])
    detail = "; ".join(f"{r.check}: {r.message}" for r in worst)
    if len(detail) > NAGIOS_LIMIT:
        detail = detail[: NAGIOS_LIMIT - 3] + "..."
    passed = f"{counts['pass']} passed, {counts['skip']} skipped"
    body = f"{node}: {summary}: {detail}" if worst else f"{node}: {passed}"
    perf = " ".join(f"{s}={counts[s]}" for s in ("pass", "warn", "fail", "error", "skip"))
    return f"ENVCHECK {NAGIOS_STATES[code]} - {_one_line(body)} | {perf}", code


def nagios_report(report: Report, node: str) -> Report:
    """``report`` to be printed as its Nagios line (for the node its environment names, else
    ``node``); the JSON and JUnit files still carry every result."""
    return replace(report, form="nagios", environment={"host": node, **report.environment})


def nagios_unknown(title: str, node: str, why: str) -> Report:
    """The Nagios report of a check that could not run: UNKNOWN (3), saying why."""
    return Report(title, (Result("", Status.ERROR, why, node=node),),
                  environment={"host": node}, code=ExitCode.ERROR, form="nagios")


def nagios_text(report: Report) -> str:
    """The one line a Nagios report prints; a report that carries its own code is UNKNOWN."""
    node = report.environment.get("host", "")
    if report.code is not None:
        why = "; ".join(r.message for r in report.results if r.status is Status.ERROR)
        return f"ENVCHECK {NAGIOS_STATES[3]} - {_one_line(f'{node}: {why}')}\n"
    return nagios_line(report, node)[0] + "\n"


def _one_line(text: str) -> str:
    # '|' starts Nagios performance data; newlines end the plugin's output
    return " ".join(text.replace("|", "/").split())
