"""Every way out writes the --json/--junit report: a run ended by SIGINT or SIGTERM (exit 130,
143) and a command line that does not parse (exit 4) leave one error result naming what
stopped it. build, install and verify cluster under real signals: tests/test_faults_build.py,
tests/test_install.py, tests/test_faults_verify.py."""

from __future__ import annotations

import os
import signal
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from tests.support.report_schema import validated
from tests.support.stopping import stopped_once_ready

ROOT = Path(__file__).resolve().parents[2]


BY_SIGNAL = pytest.mark.parametrize(
    ("sig", "code", "says"),
    [
        (signal.SIGINT, ExitCode.INTERRUPTED, "interrupted (SIGINT, Ctrl-C) before it finished"),
        (signal.SIGTERM, ExitCode.TERMINATED, "terminated by SIGTERM before it finished"),
    ],
)


@BY_SIGNAL
def test_verify_node_stopped_by_a_signal_writes_both_reports(
    tmp_path: Path, sig: int, code: int, says: str
) -> None:
    started = tmp_path / "started"
    (tmp_path / "slow_import_for_signals.py").write_text(
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(120)\n"
    )
    json_out, junit_out = tmp_path / "r.json", tmp_path / "r.xml"
    argv = [sys.executable, "-m", "envcheck", "verify", "node", "--import",
            "slow_import_for_signals", "--probe-timeout", "120", "--json", str(json_out),
            "--junit", str(junit_out)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    returncode, err = stopped_once_ready(argv, env, started.exists, sig)
    assert returncode == code, err
    data = validated(json_out)
    assert data["exit_code"] == code and data["title"] == "envcheck verify node"
    assert [(r["status"], r["message"]) for r in data["results"]] == [("error", says)]
    (case,) = ET.parse(junit_out).getroot().iter("testcase")
    assert case.find("error").get("message") == says


@BY_SIGNAL
def test_a_signal_while_the_flags_are_read_writes_the_report_too(
    tmp_path: Path, sig: int, code: int, says: str
) -> None:
    # the signal lands after envcheck's handlers are in place but before the verb runs: the
    # verb's parser is built slowly here so that a real signal reliably arrives then
    started, json_out = tmp_path / "started", tmp_path / "r.json"
    argv = ["install", "x.lock", "--prefix", str(tmp_path / "env"), "--json", str(json_out)]
    program = (
        "import pathlib, sys, time\n"
        "from envcheck import cli\n"
        "real = cli.build_parser\n"
        "def slow(argv):\n"
        f"    pathlib.Path({str(started)!r}).touch()\n"
        "    time.sleep(60)\n"
        "    return real(argv)\n"
        "cli.build_parser = slow\n"
        f"sys.exit(cli.main({argv!r}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    returncode, err = stopped_once_ready([sys.executable, "-c", program], env, started.exists, sig)
    assert returncode == code, err
    data = validated(json_out)
    assert data["exit_code"] == code and data["title"] == "envcheck install"
    assert [(r["status"], r["message"]) for r in data["results"]] == [("error", says)]


@pytest.mark.parametrize(
    ("argv", "title", "says"),
    [
        (["verify", "node", "--expect-gpus", "eight"], "envcheck verify node",
         "argument --expect-gpus: invalid int value: 'eight'"),
        (["verify", "cluster", "--no-such-flag"], "envcheck verify cluster",
         "unrecognized arguments: --no-such-flag"),
        (["build"], "envcheck build", "the following arguments are required"),
        (["install", "lock.yml"], "envcheck install", "the following arguments are required"),
    ],
)
def test_an_argument_error_writes_the_report_too(
    tmp_path: Path, capsys, argv: list[str], title: str, says: str
) -> None:
    json_out, junit_out = tmp_path / "r.json", tmp_path / "r.xml"
    with pytest.raises(SystemExit) as left:  # argparse's refusals leave through SystemExit(4)
        main([*argv, "--json", str(json_out), "--junit", str(junit_out)])
    assert left.value.code == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    data = validated(json_out)
    assert data["exit_code"] == 4 and data["title"] == title
    (result,) = data["results"]
    assert result["status"] == "error" and says in result["message"]
    (case,) = ET.parse(junit_out).getroot().iter("testcase")
    assert says in case.find("error").get("message")


def test_an_argument_error_with_a_refused_report_path_writes_nothing(tmp_path: Path, capsys):
    with pytest.raises(SystemExit) as left:
        main(["verify", "node", "--bogus", "--json", str(tmp_path)])  # a directory
    assert left.value.code == ExitCode.BAD_INPUT
    lines = capsys.readouterr().err.strip().splitlines()
    assert "unrecognized arguments: --bogus" in lines[0]
    assert len(lines) == 2 and "the report cannot be written" in lines[1]


@pytest.mark.parametrize(
    ("argv", "help_of"),
    [
        (["verify", "node", "--libraries", "openblas"], "envcheck verify node"),
        (["slurm", "script", "-p", "gpu-titanxp"], "envcheck slurm script"),
        (["completion", "bash", "--bogus"], "envcheck completion"),
    ],
)
def test_a_flag_the_verb_does_not_take_points_at_the_verbs_help(capsys, argv, help_of):
    """The verb's --help lists the flags it takes; envcheck --help lists none of them."""
    with pytest.raises(SystemExit) as left:
        main(argv)
    assert left.value.code == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"unrecognized arguments: {' '.join(argv[2:])}" in err, err
    assert err.rstrip().endswith(f"(see {help_of} --help)"), err
