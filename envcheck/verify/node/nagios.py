"""One line per node and Nagios's exit codes, for Slurm prologs, NHC and monitoring.

    ENVCHECK CRITICAL - gpu-node-1: 2 fail, 1 warn: gpus: expected 8 GPUs, NVML sees 7; ...
        | pass=11 warn=1 fail=2 error=0 skip=3     (one line in fact; wrapped here)

0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN: the codes NHC, gcm and Nagios plugins use, and the
same numbers as envcheck's own OK/WARN/FAIL/ERROR. Anything that stops the check itself
(bad flags, unreadable lock) is UNKNOWN (3), never a traceback or another code.
"""

from __future__ import annotations

from envcheck.report import Report, Status

STATES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}
CODE = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2, Status.ERROR: 3}
LIMIT = 400  # characters of detail: prolog logs and NHC keep one short line


def nagios_line(report: Report, node: str) -> tuple[str, int]:
    """(the line, its exit code) for one node's report."""
    code = CODE[report.status]
    counts = report.counts()
    worst = [r for r in report.results if r.status in (Status.ERROR, Status.FAIL)] or [
        r for r in report.results if r.status is Status.WARN
    ]
    summary = ", ".join(f"{counts[s]} {s}" for s in ("error", "fail", "warn") if counts[s])
    detail = "; ".join(f"{r.check}: {r.message}" for r in worst)
    if len(detail) > LIMIT:
        detail = detail[: LIMIT - 3] + "..."
    passed = f"{counts['pass']} passed, {counts['skip']} skipped"
    body = f"{node}: {summary}: {detail}" if worst else f"{node}: {passed}"
    perf = " ".join(f"{s}={counts[s]}" for s in ("pass", "warn", "fail", "error", "skip"))
    return f"ENVCHECK {STATES[code]} - {_one_line(body)} | {perf}", code


def unknown_line(node: str, why: str) -> tuple[str, int]:
    return f"ENVCHECK UNKNOWN - {node}: {_one_line(why)}", 3


def _one_line(text: str) -> str:
    # '|' starts Nagios performance data; newlines end the plugin's output
    return " ".join(text.replace("|", "/").split())
