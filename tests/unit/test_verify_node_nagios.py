"""`envcheck verify node --nagios`: one line, Nagios's 0/1/2/3, for prologs and NHC."""

from __future__ import annotations

import json
import subprocess
import sys

from envcheck.report import Report, Result, Status, nagios_line
from envcheck.verify.facts import facts_to_dict
from tests.support.factories import healthy_a100x8, with_process


def envcheck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envcheck", "verify", "node", "--nagios", *args],
                          capture_output=True, text=True, timeout=120)


def test_lines_and_codes_follow_nagios():
    ok = Report("verify node", (Result("gpus", Status.PASS, "8 GPUs"),
                                Result("ucx", Status.SKIP, "no UCX")))
    assert nagios_line(ok, "n1") == (
        "ENVCHECK OK - n1: 1 passed, 1 skipped | pass=1 warn=0 fail=0 error=0 skip=1", 0)
    bad = Report("verify node", (Result("gpus", Status.FAIL, "expected 8 | saw 7\nGPUs"),
                                 Result("shm", Status.WARN, "small")))
    line, code = nagios_line(bad, "n1")
    assert code == 2 and line.startswith("ENVCHECK CRITICAL - n1: 1 fail, 1 warn: gpus: expected")
    assert "\n" not in line and line.count("|") == 1  # '|' only before performance data
    assert nagios_line(Report("x", (Result("p", Status.ERROR, "raised"),)), "n")[1] == 3


def test_described_node_with_a_foreign_gpu_process_is_one_warning_line(tmp_path):
    facts = with_process(healthy_a100x8(), 3, pid=999, user="bob", mib=20000)
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts_to_dict(facts)))
    p = envcheck("--facts", str(path), "--no-plugins")
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and p.stderr == ""
    assert p.returncode in (1, 2) and lines[0].startswith(("ENVCHECK WARNING", "ENVCHECK CRITICAL"))
    assert "gpu-node-1" in lines[0] and "busy-gpus" in lines[0] and "bob" in lines[0]


def test_this_machine_missing_gpus_is_critical_and_a_bad_lock_is_unknown(tmp_path):
    p = envcheck("--expect-gpus", "8", "--json", str(tmp_path / "r.json"))
    assert p.returncode == 2 and p.stdout.startswith("ENVCHECK CRITICAL - ")
    assert len(p.stdout.splitlines()) == 1
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 2
    p = envcheck("--lock", str(tmp_path / "missing.lock"))
    assert p.returncode == 3 and p.stdout.startswith("ENVCHECK UNKNOWN - ")
    assert "missing.lock" in p.stdout and p.stderr == ""
