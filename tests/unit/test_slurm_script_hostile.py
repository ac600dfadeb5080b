"""`envcheck slurm script` with hostile option values: every generated script is run with bash in
a sandbox whose PATH holds stub srun/sbatch/scontrol/python/envcheck/dask commands that log
their argv. No value may become shell code: each is refused (exit 4) or reaches the stubs
verbatim, and the marker a `$(touch ...)` would create never appears."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from envcheck.cli import main

MARK = "pwned"
# shell metacharacters of every kind, in one value; touch would create ./pwned
HOSTILE = (f"x $(touch {MARK}) `touch {MARK}` ';touch {MARK};' \"&& touch {MARK}\" "
           f"* ?[a] \\ # ${{HOME}} | >{MARK}2")
NEWLINE = f"x\ntouch {MARK}"

STUB = r"""#!/bin/bash
# log CONDA_PREFIX then argv, NUL-separated, one file per call (written whole, then renamed in)
name=$(basename "$0")
tmp="$STUB_LOG.$name.$$"
printf '%s\0' "${CONDA_PREFIX-}" "$@" > "$tmp"
mv "$tmp" "$(mktemp "$STUB_LOG/$name.XXXXXX")"
# the wait for the workers returns once they are up: here, once srun (started in the
# background) has been called; the script's exit trap ends what is still running
if [ "$name" = python ] && [ "${1-}" = -c ] && [[ "${2-}" == *wait_for_workers* ]]; then
    for _ in $(seq 100); do
        for f in "$STUB_LOG"/srun.*; do [ -s "$f" ] && exit 0; done
        sleep 0.1
    done
fi
prev=""
for a in "$@"; do
    # the scheduler writes its scheduler file; the script waits for it
    if [ "$name" = python ] && [ "$prev" = --scheduler-file ]; then printf '{}' > "$a"; fi
    prev=$a
done
exit 0
"""
STUBS = ("srun", "sbatch", "scontrol", "python", "envcheck", "dask", "dask-cuda-worker",
         "then-cmd")


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    for name in STUBS:
        stub = tmp_path / "bin" / name
        stub.parent.mkdir(exist_ok=True)
        stub.write_text(STUB)
        stub.chmod(0o755)
    (tmp_path / "log").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path


def generate(capsys, *args: str) -> tuple[int, str, str]:
    try:
        code = main(["slurm", "script", *args])
    except SystemExit as e:  # argparse's refusals (exit 4, one line)
        code = int(e.code)
    out, err = capsys.readouterr()
    return code, out, err


def run_in_sandbox(sandbox: Path, text: str) -> dict[str, list[list[str]]]:
    """Run the script with bash; {stub name: [[CONDA_PREFIX, *argv] per call]}."""
    script = sandbox / "job.sh"
    script.write_text(text)
    env = {"PATH": f"{sandbox / 'bin'}:/usr/bin:/bin", "STUB_LOG": str(sandbox / "log"),
           "SLURM_JOB_ID": "42", "SLURM_SUBMIT_DIR": str(sandbox / "work"),
           "HOME": str(sandbox), "TMPDIR": str(sandbox)}
    # a session of its own: the stubs the script starts in the background (srun ... &) are
    # in its process group, and their logs are read once every one of them has ended
    p = subprocess.Popen(["bash", str(script)], cwd=sandbox / "work", env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    _, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    calls: dict[str, list[list[str]]] = {}
    for f in sorted((sandbox / "log").iterdir()):
        calls.setdefault(f.name.split(".")[0], []).append(f.read_text().split("\0")[:-1])
    return calls


def after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def no_marker(sandbox: Path) -> None:
    made = [p for p in sandbox.rglob("*") if p.name in (MARK, MARK + "2")]
    assert not made, f"a value ran as shell code: {made}"


def scheduler(calls) -> list[str]:
    return next(c for c in calls["python"] if "distributed.cli.dask_scheduler" in c)


# option -> how to see that the stubs got the value verbatim
LANDS = {
    "--interface": lambda c, v: after(scheduler(c), "--interface") == v
    and after(c["srun"][0], "--interface") == v,
    "--dashboard": lambda c, v: after(scheduler(c), "--dashboard-address") == v,
    "--smoke": lambda c, v: after(c["envcheck"][0], "--smoke") == v,
    "--shared-dir": lambda c, v: after(scheduler(c), "--scheduler-file")
    == os.path.abspath(v) + "/42/scheduler.json",
    "--lock": lambda c, v: after(c["envcheck"][0], "--lock") == os.path.abspath(v),
    "--env": lambda c, v: c["envcheck"][0][0] == os.path.abspath(v),  # CONDA_PREFIX
}
SBATCH_ONLY = ("--job-name", "--partition", "--account", "--sbatch")  # read by sbatch, not bash
REFUSED = ("--time", "--nodes", "--gpus-per-node", "--cpus-per-gpu", "--wait",
           "--verify-timeout", "--submit-timeout", "--protocol", "--then-on")


def value_for(option: str, raw: str, sandbox: Path) -> str:
    """Options that name files get a real file or prefix with the hostile name."""
    if option == "--env":
        (sandbox / "work" / raw / "bin").mkdir(parents=True)
    if option == "--lock":
        (sandbox / "work" / raw).write_text("version: 6\n")
    if option == "--sbatch":
        return "--comment=" + raw
    return raw


@pytest.mark.parametrize("option", [*LANDS, *SBATCH_ONLY, *REFUSED])
def test_a_hostile_value_is_refused_or_lands_verbatim(capsys, sandbox, monkeypatch, option):
    monkeypatch.chdir(sandbox / "work")
    value = value_for(option, HOSTILE.replace("/", "_"), sandbox)
    code, text, err = generate(capsys, f"{option}={value}")
    if option in REFUSED:
        assert code == 4 and "Traceback" not in err and len(err.strip().splitlines()) == 1
        return
    assert code == 0, err
    calls = run_in_sandbox(sandbox, text)
    no_marker(sandbox)
    if option in LANDS:
        assert LANDS[option](calls, value), calls
    else:
        # sbatch's own parser reads it: one double-quoted #SBATCH argument (real sbatch reads
        # it back in tests/slurm/test_slurm_jobs.py)
        sbatch_lines = [ln for ln in text.splitlines() if ln.startswith("#SBATCH")]
        assert any(value.replace("\\", "\\\\").replace('"', '\\"') in ln for ln in sbatch_lines)
        assert all(ln.count("\n") == 0 for ln in sbatch_lines)


@pytest.mark.parametrize("option", [*LANDS, *SBATCH_ONLY, "--time"])
def test_a_newline_or_control_character_is_one_line_exit_4(capsys, sandbox, monkeypatch, option):
    monkeypatch.chdir(sandbox / "work")
    for raw in (NEWLINE, "x\x1b[31my", "x\ry"):
        value = value_for(option, raw, sandbox)
        code, text, err = generate(capsys, f"{option}={value}")
        assert code == 4 and text == "", (option, raw)
        assert err.count("\n") == 1 and option in err and "control character" in err


def test_then_runs_exactly_the_given_command_and_nothing_else(capsys, sandbox, monkeypatch):
    """--then is a command by design: the script hands the string, quoted, to `bash -c`; the
    script itself expands nothing in it."""
    monkeypatch.chdir(sandbox / "work")
    for raw in (HOSTILE, f"line one\nline $(touch {MARK}) two\tand a tab"):
        for f in (sandbox / "log").iterdir():
            f.unlink()
        code, text, err = generate(capsys, "--then", "then-cmd " + shlex.quote(raw))
        assert code == 0, err
        calls = run_in_sandbox(sandbox, text)
        no_marker(sandbox)
        assert calls["then-cmd"] == [["", raw]]
        assert (sandbox / "work" / ".envcheck" / "42" / "then.rc").read_text() == "0\n"


def test_then_with_an_escape_sequence_is_refused(capsys):
    code, _, err = generate(capsys, "--then", "echo \x1b]0;title\x07")
    assert code == 4 and "--then: control character" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--nodes", "0"], "--nodes 0: must be more than 0"),
        (["--nodes", "-3"], "--nodes -3"),
        (["--nodes", "1e23"], "not a whole number: '1e23'"),
        (["--nodes", "1" + "0" * 23], "at most 100000"),
        (["--wait", "1" + "0" * 27], "--wait 1e+27: must be more than 0 and at most 604800"),
        (["--wait", "1e27"], "not a whole number"),
        (["--gpus-per-node", "65"], "at most 64"),
        (["--cpus-per-gpu", "0"], "--cpus-per-gpu 0"),
        (["--verify-timeout", "nan"], "seconds must be a finite number"),
        (["--verify-timeout", "inf"], "seconds must be a finite number"),
        (["--verify-timeout", "-1"], "--verify-timeout -1"),
        (["--verify-timeout", "0"], "--verify-timeout 0"),
        (["--verify-timeout", "100000"], "at most 86400"),
        (["--submit", "--submit-timeout", "-5"], "--submit-timeout -5"),
        (["--submit", "--submit-timeout", "nan"], "finite"),
    ],
)
def test_numbers_out_of_bounds_are_refused_before_anything_is_written(capsys, args, said):
    code, text, err = generate(capsys, *args)
    assert code == 4 and text == ""
    assert said in err and "Traceback" not in err and err.count("\n") == 1


def test_the_default_script_still_runs_its_steps_in_order(capsys, sandbox, monkeypatch):
    monkeypatch.chdir(sandbox / "work")
    code, text, _ = generate(capsys, "--nodes", "2", "--gpus-per-node", "4")
    assert code == 0
    calls = run_in_sandbox(sandbox, text)
    assert after(scheduler(calls), "--dashboard-address") == "127.0.0.1:0"
    assert "--nodes=2" in calls["srun"][0] and "--ntasks-per-node=4" in calls["srun"][0]
    wait = next(c for c in calls["python"] if c[1] == "-c" and "wait_for_workers" in c[2])
    assert wait[4] == "8"  # all 2 x 4 workers
    assert after(calls["envcheck"][0], "--scheduler-file").endswith(".envcheck/42/scheduler.json")


VERDICT_SRUN = r"""#!/bin/bash
name=$(basename "$0")
f=$(mktemp "$STUB_LOG/$name.XXXXXX")
printf '%s\0' "${CONDA_PREFIX-}" "$@" > "$f"
exit "${STUB_VERDICT:-0}"
"""


@pytest.mark.parametrize(("verdict", "runs"), [(0, True), (1, True), (2, False), (3, False)])
def test_job_mode_runs_then_only_when_the_verdict_allows(
    sandbox: Path, capsys, verdict: int, runs: bool
) -> None:
    (sandbox / "bin" / "srun").write_text(VERDICT_SRUN)
    code, text, _ = generate(capsys, "--job", "--nodes", "2", "--gpus-per-node", "4",
                             "--slurm-version", "19.05", "--lock", __file__, "--then",
                             "then-cmd " + shlex.quote(HOSTILE))
    assert code == 0
    script = sandbox / "job.sh"
    script.write_text(text)
    env = {"PATH": f"{sandbox / 'bin'}:/usr/bin:/bin", "STUB_LOG": str(sandbox / "log"),
           "SLURM_JOB_ID": "42", "SLURM_SUBMIT_DIR": str(sandbox / "work"),
           "HOME": str(sandbox), "TMPDIR": str(sandbox), "STUB_VERDICT": str(verdict)}
    p = subprocess.run(["bash", str(script)], cwd=sandbox / "work", env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == verdict, p.stderr
    logged = {f.name.split(".")[0]: f.read_text().split("\0")[:-1]
              for f in (sandbox / "log").iterdir()}
    srun = logged["srun"][1:]
    assert srun[srun.index("envcheck"):srun.index("envcheck") + 3] == ["envcheck", "verify", "job"]
    assert after(srun, "--lock") == __file__ and "--gpus-per-task=1" in srun
    assert ("then-cmd" in logged) is runs
    if runs:
        assert logged["then-cmd"][1:] == [HOSTILE]
    assert not list(sandbox.rglob(f"{MARK}*"))


def test_job_mode_refuses_options_that_shape_a_dask_cluster(capsys) -> None:
    code, _, err = generate(capsys, "--job", "--protocol", "ucx", "--smoke", "submit")
    assert code == 4
    assert err.strip() == "envcheck: --protocol, --smoke: shape the Dask cluster, and --job " \
                          "starts none"
