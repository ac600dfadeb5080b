"""Submit the script with sbatch, wait for the job, and read back the report it wrote."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from envcheck.errors import BadInput, EnvcheckError, Unreachable
from envcheck.inputs import load_json_file, open_input, read_text
from envcheck.report import Measurement, Report, Result, Status, Table

TERMINAL = (
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE",
)
POLL = 0.25
REPORT_MAX_BYTES = 64 << 20  # what the job wrote to shared storage: read, bounded
TAIL_BYTES = 64 << 10  # of the job's log, for the last lines of a job that never reported
NOTE_BYTES = 64 << 10  # of a note the job's script wrote (why it failed, --then's exit)
# Pending reasons that no amount of waiting fixes: the request exceeds what the partition's
# nodes have or what the account may use (Slurm keeps such jobs pending unless
# EnforcePartLimits rejects them at submission).
NEVER_STARTS = (
    "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
    "InvalidAccount", "InvalidQOS", "QOSMaxGRESPerJob", "QOSMaxCpuPerJobLimit",
    "AssocMaxGRESPerJob",
)


class SlurmMissing(EnvcheckError):
    """No Slurm here: sbatch is not on PATH, or finds no configuration (exit 3: nothing the
    user typed is wrong; the system it needs is not there)."""


# sbatch's words for "no slurm.conf and no configless controller" and "no controller answers"
_NO_CONFIG = ("Could not establish a configuration source", "s_p_parse_file: cannot stat file",
              "fetch_config")
_NO_CONTROLLER = ("Unable to contact slurm controller", "Socket timed out",
                  "Connection refused", "Zero Bytes were transmitted")
SBATCH_TIMEOUT_S = 60.0


def sbatch(script: str, output: str, cwd: Path) -> str:
    """Submit `script` (text, on stdin); the job id. Slurm's refusal of the job is one
    BadInput line (exit 4); no Slurm here exits 3, a controller that does not answer 7."""
    try:
        p = subprocess.run(
            ["sbatch", "--parsable", f"--output={output}"],
            input=script, capture_output=True, text=True, cwd=cwd, timeout=SBATCH_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise SlurmMissing("sbatch not found: run --submit on a Slurm login node") from None
    except subprocess.TimeoutExpired:
        raise Unreachable(f"sbatch did not answer within {SBATCH_TIMEOUT_S:g} s (the Slurm "
                          "controller or its configuration source is unreachable)") from None
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
        said = lines[-1] if lines else f"exit {p.returncode}"
        if any(word in p.stderr for word in _NO_CONFIG):
            raise SlurmMissing(f"no Slurm configuration here ({said}): run --submit on a "
                               "Slurm login node")
        if any(word in p.stderr for word in _NO_CONTROLLER):
            raise Unreachable(f"sbatch cannot reach the Slurm controller: {said}")
        raise BadInput(f"sbatch refused the job: {said}")
    return p.stdout.strip().split(";")[0]


def job_state(job: str) -> dict[str, str]:
    """scontrol's key=value fields for the job ({} once Slurm has forgotten it)."""
    p = subprocess.run(
        ["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=30
    )
    if p.returncode != 0:
        return {}
    out = {}
    for word in p.stdout.split():
        k, sep, v = word.partition("=")
        if sep and k not in out:
            out[k] = v
    return out


def wait(job: str, timeout: float | None = None) -> tuple[dict[str, str], float]:
    """Poll until the job ends; (its last fields, seconds waited). Ctrl-C cancels the job."""
    t0 = time.monotonic()
    fields: dict[str, str] = {}
    try:
        while True:
            now = job_state(job)
            if not now:  # purged (MinJobAge): what we saw last is all there is
                return fields or {"JobState": "UNKNOWN"}, time.monotonic() - t0
            fields = now
            if fields.get("JobState", "").split("+")[0] in TERMINAL:
                return fields, time.monotonic() - t0
            reason = fields.get("Reason", "")
            if fields.get("JobState") == "PENDING" and reason in NEVER_STARTS:
                cancel(job)
                raise BadInput(
                    f"job {job} can never start: Slurm keeps it pending with reason {reason} "
                    "(it asks for more than the partition's nodes have): cancelled"
                )
            if timeout is not None and time.monotonic() - t0 > timeout:
                cancel(job)
                raise EnvcheckError(
                    f"job {job} still {fields.get('JobState', '?')} after {timeout:g} s "
                    f"(reason: {fields.get('Reason', '?')}): cancelled"
                )
            time.sleep(POLL)
    except KeyboardInterrupt:
        cancel(job)
        raise


def cancel(job: str) -> None:
    subprocess.run(["scancel", job], capture_output=True, timeout=30)


def report_from_json(data: dict) -> Report:
    """The Report a verify run wrote with --json (schema envcheck.report/1)."""
    return Report(
        title=data.get("title", "envcheck verify cluster"),
        results=tuple(
            Result(r["check"], Status(r["status"]), r.get("message", ""), r.get("node", ""),
                   r.get("fix", ""), r.get("group", ""))
            for r in data.get("results", ())
        ),
        measurements=tuple(Measurement(**m) for m in data.get("measurements", ())),
        tables=tuple(
            Table(t["title"], tuple(t["columns"]), tuple(tuple(r) for r in t["rows"]))
            for t in data.get("tables", ())
        ),
        environment=dict(data.get("environment", {})),
    )


def _tail(path: Path, n: int = 5) -> str:
    """The last ``n`` lines of the job's log (its last TAIL_BYTES), opened by open_input:
    a FIFO or a device under that name is named, not read."""
    if not os.path.lexists(path):
        return f"(no {path.name})"
    try:
        fd = open_input(path, "the job's log")
    except BadInput as e:
        return f"({e})"
    with os.fdopen(fd, "rb") as f:
        f.seek(max(0, os.fstat(fd).st_size - TAIL_BYTES))
        text = f.read(TAIL_BYTES).decode("utf-8", "replace")
    return " | ".join(text.strip().splitlines()[-n:])


def _note(path: Path, what: str) -> str:
    """A short file the job's script wrote (its reason, an exit code): read_text's bounds."""
    return read_text(path, what, NOTE_BYTES).strip()


def collect(job: str, fields: dict[str, str], run_dir: Path, log: Path, seconds: float) -> Report:
    """The job's verify report, with the job's own facts added; a job that never got to
    verify is one EnvcheckError line saying why (the script's reason, else its log's tail)."""
    state = fields.get("JobState", "UNKNOWN")
    report_file = run_dir / "report.json"
    if not report_file.exists():
        reason = _note(run_dir / "failed", "the job's reason") \
            if os.path.lexists(run_dir / "failed") else _tail(log)
        raise EnvcheckError(f"job {job} ended {state} before verify reported: {reason}")
    data = load_json_file(report_file, "the job's report", REPORT_MAX_BYTES)
    try:
        report = report_from_json(data)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise EnvcheckError(f"job {job}: {report_file} is not a verify report ({e!r})") from None
    env = dict(report.environment)
    env["slurm job"] = f"{job} {state} (exit {fields.get('ExitCode', '?')}) on " \
        f"{fields.get('NodeList', '?')}, {seconds:.1f} s from sbatch"
    env["job log"] = str(log)
    then_rc = run_dir / "then.rc"
    if os.path.lexists(then_rc):
        code = _note(then_rc, "the job's --then exit code")
        env["--then"] = f"ran, exit {code} (output in the job log)"
    elif (run_dir / "verify.rc").exists():
        env["--then"] = "not run (verdict did not allow it, or none given)"
    measurements = (*report.measurements, Measurement("sbatch to verdict", seconds, "s",
                                                       node=f"job {job}"))
    return Report(report.title, report.results, measurements, report.tables, env)


def submit(script: str, shared_dir: Path, timeout: float | None = None) -> Report:
    shared_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    job = sbatch(script, str(shared_dir / "slurm-%j.out"), Path(os.getcwd()))
    fields, _ = wait(job, timeout)
    seconds = time.monotonic() - t0
    return collect(job, fields, shared_dir / job, shared_dir / f"slurm-{job}.out", seconds)
