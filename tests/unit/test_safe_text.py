"""What envcheck shows of text from outside, through the one function every renderer and
stderr use (envcheck.text.safe): a URL's password is ``***`` in printed output and in --json
(install, build), an escape sequence in a lock (an OSC 52 clipboard write) reaches neither the
terminal nor a report raw (diff, why). And the API's wrong types, one clear line each."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

import envcheck
from envcheck.cli import main
from envcheck.errors import BadInput, ExitCode
from envcheck.progress import Line
from envcheck.provision.engine_run import run_engine
from envcheck.text import redact
from envcheck.verify.job.group import debug_line
from envcheck.verify.job.launch import LaunchInfo

DATA = Path(__file__).parents[1] / "data"
LOCK = DATA / "pangeo-pytorch-excerpt.conda-lock.yml"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # "set the clipboard to: echo pwned"


@pytest.mark.parametrize(("text", "seen"), [
    ("https://user:hunter2@host/x", "https://user:***@host/x"),
    ("from https://u:p@ss@host:8080/p?q=a@b ok", "from https://u:***@host:8080/p?q=a@b ok"),
    ("https://host:8080/path@x", "https://host:8080/path@x"),
    ("https://conda.anaconda.org/t/tk-123/ch/linux-64", "https://conda.anaconda.org/t/***/ch/linux-64"),
    ("file:///tmp/x user:pw@host", "file:///tmp/x user:pw@host"),
])  # fmt: skip
def test_redact_hides_a_urls_password_and_token_and_nothing_else(text, seen):
    assert redact(text) == seen


def _lock_with(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    text = LOCK.read_text()
    assert old in text
    path = tmp_path / "changed.conda-lock.yml"
    path.write_text(text.replace(old, new, count))
    return path


def test_install_never_prints_or_writes_a_urls_password(tmp_path, capsys):
    lock = _lock_with(tmp_path, "https://conda.anaconda.org/", "https://user:hunter2@127.0.0.1:9/",
                      count=-1)  # every package
    report = tmp_path / "r.json"
    rc = main(["install", str(lock), "--prefix", str(tmp_path / "env"), "--cache-dir",
               str(tmp_path / "cache"), "--fetch-timeout", "3", "--json", str(report)])
    captured = capsys.readouterr()
    assert rc == ExitCode.UNREACHABLE, captured.err
    assert "hunter2" not in captured.out + captured.err + report.read_text()
    assert "user:***@127.0.0.1:9" in captured.err and "user:***@" in report.read_text()


def test_build_never_prints_or_writes_a_channels_password(tmp_path, capsys):
    recipe = tmp_path / "pw.yaml"
    recipe.write_text('name: pw\nchannels: ["https://user:hunter2@127.0.0.1:9/conda-forge"]\n'
                      "platforms: [linux-64]\ndependencies:\n  - python=3.11\n")
    report = tmp_path / "r.json"
    rc = main(["build", str(recipe), "--out", str(tmp_path / "locks"), "--fetch-timeout", "3",
               "--json", str(report)])
    captured = capsys.readouterr()
    assert rc == ExitCode.UNREACHABLE, captured.err
    assert "hunter2" not in captured.out + captured.err + report.read_text()
    assert "user:***@127.0.0.1:9" in captured.err and "user:***@" in report.read_text()


@pytest.mark.parametrize("verb", ["diff", "diff --markdown", "why"])
def test_an_escape_sequence_in_a_lock_reaches_no_terminal_and_no_report(tmp_path, capsys, verb):
    # YAML's own escapes: the lock file itself holds no control byte, its parsed value does
    evil = _lock_with(tmp_path, "version: 3.10.11",
                      'version: "3.10.11\\e]52;c;ZWNobyBwd25lZA==\\a"')
    report = tmp_path / "r.json"
    argv = {"diff": ["diff", str(LOCK), str(evil)],
            "diff --markdown": ["diff", str(LOCK), str(evil), "--markdown"],
            "why": ["why", "python", str(evil), "-v"]}[verb]
    assert main([*argv, "--json", str(report)]) == 0
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b]52;c;" in shown  # shown, escaped: nothing hidden either
    data = report.read_text()
    assert OSC52 not in json.loads(data) and "\x1b" not in json.dumps(json.loads(data),
                                                                       ensure_ascii=False)
    assert "\\\\x1b]52" in data


def test_verify_cluster_refuses_what_is_not_a_client_in_one_line():
    with pytest.raises(BadInput, match="verify_cluster takes a distributed.Client, a scheduler "
                                       "address .* not int 123"):
        envcheck.verify_cluster(123)


@pytest.mark.parametrize("smoke", [5, b"submit", [1]])
def test_verify_cluster_refuses_a_smoke_of_the_wrong_type_in_one_line(smoke):
    with pytest.raises(BadInput, match="smoke must be a string"):
        envcheck.verify_cluster("tcp://127.0.0.1:9", smoke=smoke, timeout=1)


def test_a_try_that_is_no_pip_requirement_is_one_line(tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nchannels: [conda-forge]\nplatforms: [linux-64]\n"
                      "dependencies:\n  - python=3.11\n")
    assert main(["build", str(recipe), "--try", "pip:!!!", "--out", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a pip requirement: '!!!'" in err, err


def test_a_progress_line_shows_an_escape_escaped():
    """The status line install and build redraw: its only escape is its own erase."""
    stream = io.StringIO()
    Line(stream, show=True).say(f"fetch python-3.10.11{OSC52}")
    drawn = stream.getvalue()
    assert drawn.count("\x1b") == 1 and drawn.endswith("\x1b[K") and "\x07" not in drawn
    assert "\\x1b]52;c;" in drawn


def test_a_container_engines_output_reaches_the_terminal_escaped(capfd):
    """image's engine echoes the build's steps (text from the lock) to stderr as it runs."""
    code = f"import sys; sys.stderr.write({OSC52 + 'https://u:hunter2@h/x'!r} + '\\n')"
    rc, tail = run_engine([sys.executable, "-c", code])
    err = capfd.readouterr().err
    assert rc == 0 and "\x1b" not in err and "\x07" not in err and "hunter2" not in err, err
    assert "\\x1b]52;c;" in err and "u:***@h" in err


def test_verify_jobs_rank_lines_are_escaped(capsys):
    launch = LaunchInfo("env", rank=1, world_size=2, local_rank=1)
    debug_line(launch, f"error: 127.0.0.1 said {OSC52}\x1b[2J")
    err = capsys.readouterr().err
    assert err.startswith("envcheck verify job: rank 1/2: error: ") and "\x1b" not in err, err
    assert "\\x1b]52;c;" in err and "\\x1b[2J" in err


@pytest.mark.parametrize("verb", ["install", "verify node --lock", "slurm script --lock",
                                  "image --print"])
def test_every_verb_that_reads_a_lock_prints_its_escapes_escaped(tmp_path, capsys, verb):
    evil = _lock_with(tmp_path, "version: 3.10.11",
                      'version: "3.10.11\\e]52;c;ZWNobyBwd25lZA==\\a\\e[2J"')
    argv = {"install": ["install", str(evil), "--prefix", str(tmp_path / "env")],
            "verify node --lock": ["verify", "node", "--lock", str(evil), "--no-plugins", "-v"],
            "slurm script --lock": ["slurm", "script", "--lock", str(evil)],
            "image --print": ["image", str(evil), "--os", "centos7", "--print"]}[verb]
    rc = main(argv)
    shown = "".join(capsys.readouterr())
    assert "\x1b" not in shown and "\x07" not in shown and "Traceback" not in shown, shown
    if verb == "install":  # the version is refused, and shown escaped in the one line
        assert rc == 4 and "3.10.11\\x1b]52;c;" in shown, shown
