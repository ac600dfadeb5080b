"""`verify node --prefix` against interpreters that misbehave: real old Pythons, wrappers that
leave sleeping grandchildren, hang, or print what is not facts. One line each, nothing left
running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import EnvcheckError
from envcheck.verify.node.prefix import run_bounded
from tests.support.deadlines import HANG
from tests.support.old_envs import find_python


def prefix_with(tmp_path: Path, script: str) -> Path:
    """A prefix whose bin/python is `script` (bash), run in place of an interpreter."""
    prefix = tmp_path / "env"
    (prefix / "bin").mkdir(parents=True)
    py = prefix / "bin" / "python"
    py.write_text("#!/bin/bash\n" + script)
    py.chmod(0o755)
    return prefix


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def verify_prefix(capsys, prefix: Path) -> tuple[int, str]:
    rc = main(["verify", "node", "--quiet", "--no-plugins", "--prefix", str(prefix)])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(("minor", "version"), [("2.7", "2.7."), ("3.6", "3.6.")])
def test_an_interpreter_too_old_for_the_collector_is_named(tmp_path, capsys, minor, version):
    python = find_python(minor)
    if python is None:
        pytest.skip(f"no Python {minor} on this machine")
    prefix = tmp_path / "old"
    if minor == "2.7":  # no venv module: a prefix whose bin/python is that interpreter
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "python").symlink_to(python)
    else:
        subprocess.run([python, "-m", "venv", "--without-pip", str(prefix)], check=True)
    rc, err = verify_prefix(capsys, prefix)
    assert rc == 4
    assert f"Python {version}" in err and "is too old: the collector needs >= 3.8" in err
    assert "Try `python -h'" not in err and err.count("\n") == 1


@pytest.mark.slow
def test_a_sleeping_grandchild_of_the_interpreter_is_gone_afterwards(tmp_path, capsys):
    """The wrapper leaves `sleep` running with the pipes open; the facts still arrive, and
    the whole process group goes with the call."""
    pids = tmp_path / "pids"
    prefix = prefix_with(tmp_path, f"sleep 300 & echo $! >> {pids}\nexec {sys.executable} \"$@\"\n")
    started = time.monotonic()
    rc, err = verify_prefix(capsys, prefix)
    assert rc in (0, 1, 2), err  # judged: the facts came back
    assert time.monotonic() - started < HANG
    sleepers = [int(x) for x in pids.read_text().split()]
    assert len(sleepers) == 2  # the version probe and the collector each started one
    deadline = time.monotonic() + 5
    while any(map(alive, sleepers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, sleepers)), "a grandchild outlived --prefix"


@pytest.mark.slow
def test_a_timeout_kills_the_interpreters_whole_process_group(tmp_path):
    pids = tmp_path / "pids"
    prefix = prefix_with(tmp_path, f"sleep 300 & echo $! >> {pids}\nsleep 300\n")
    started = time.monotonic()
    with pytest.raises(EnvcheckError, match="did not finish collecting facts in 2 s"):
        run_bounded(prefix, [str(prefix / "bin" / "python")], "", 2.0)
    assert time.monotonic() - started < HANG
    (sleeper,) = [int(x) for x in pids.read_text().split()]
    deadline = time.monotonic() + 5
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(sleeper)


def test_an_output_flood_is_cut_and_killed(tmp_path):
    prefix = prefix_with(tmp_path, "exec cat /dev/zero\n")
    with pytest.raises(EnvcheckError, match="wrote more than 64 MiB"):
        run_bounded(prefix, [str(prefix / "bin" / "python")], "", 60.0)


VERSION_OK = 'for a in "$@"; do [ "$a" = -c ] && { echo 3.11.7; exit 0; }; done\ncat >/dev/null\n'


@pytest.mark.parametrize(
    ("prints", "says"),
    [
        ("[]", "[] is not a JSON object"),
        ("null", "null is not a JSON object"),
        ("[" * 50_000 + "]" * 50_000, "nested deeper than 64"),
        ("{\"host\": ", "not JSON"),
        ("{}", "unreadable facts"),
    ],
)
def test_output_that_is_not_facts_is_one_line_exit_3(tmp_path, capsys, prints, says):
    out = tmp_path / "out.json"
    out.write_text(prints)
    prefix = prefix_with(tmp_path, VERSION_OK + f"cat {out}\n")
    rc, err = verify_prefix(capsys, prefix)
    assert rc == 3 and "Traceback" not in err and err.count("\n") == 1
    assert says in err, err


def test_the_collector_still_runs_on_this_python(tmp_path, capsys):
    prefix = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    rc, err = verify_prefix(capsys, prefix)
    assert rc in (0, 1, 2), err
    assert os.path.exists(prefix / "bin" / "python")
