"""A real Horovod 0.28.1, built from its sdist against the CPU torch 2.13.0
(tests/support/horovod_env.py, once per run): verify job under `horovodrun --gloo`, verify node's
facts against what `horovodrun -cb` prints, the same wheel beside another torch (a second venv with
PyPI's torch 2.14.1), and a Gloo-only Horovod started by mpirun, where every rank runs alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from envcheck.verify.facts import facts_from_dict
from envcheck.verify.facts.horovod import parse_check_build
from envcheck.verify.facts.model import horovod_from_dict
from tests.support.horovod_env import (
    HOROVOD,
    OTHER_TORCH,
    HorovodEnv,
    beside_other_torch,
    horovod_env,
)
from tests.support.ports import free_port

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("horovod")]


@pytest.fixture(scope="session")
def hvd() -> HorovodEnv:
    return horovod_env()


def run(env: HorovodEnv, *cmd: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    path = f"{env.bin}:{os.environ['PATH']}"
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "PATH": path, "VIRTUAL_ENV": str(env.prefix),
                               "ENVCHECK_CACHE_DIR": str(cwd / "cache")})


def by_check(report: Path) -> dict[str, dict]:
    return {r["check"]: r for r in json.loads(report.read_text())["results"]}


def test_horovodrun_gloo_two_ranks_pass_with_horovods_own_allreduce(hvd, tmp_path):
    report = tmp_path / "r.json"
    p = run(hvd, str(hvd.bin / "horovodrun"), "--gloo", "-np", "2", "-H", "localhost:2",
            "--gloo-timeout-seconds", "60", "-p", str(free_port()),
            str(hvd.bin / "envcheck"), "verify", "job", "--timeout", "60", "--json", str(report),
            cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    got = by_check(report)
    assert got["job.ranks"]["message"].startswith("2 of 2 ranks reported (horovod)")
    assert got["job.allreduce.horovod"]["status"] == "pass"
    assert "known answer 3" in got["job.allreduce.horovod"]["message"]
    assert got["job.horovod"]["status"] == "pass"
    assert f"Horovod {HOROVOD} (Gloo controller): hvd.size() 2" in got["job.horovod"]["message"]
    env = json.loads(report.read_text())["environment"]
    assert env["launcher"] == "horovod" and env["horovod"].startswith(HOROVOD)


def test_verify_node_reports_the_build_horovodrun_check_build_prints(hvd, tmp_path):
    cb = run(hvd, str(hvd.bin / "horovodrun"), "--check-build", cwd=tmp_path)
    assert cb.returncode == 0, cb.stderr[-2000:]
    printed = parse_check_build(cb.stdout)
    report, saved = tmp_path / "r.json", tmp_path / "facts.json"
    p = run(hvd, str(hvd.bin / "envcheck"), "verify", "node", "--json", str(report),
            "--save-facts", str(saved), cwd=tmp_path)
    assert p.returncode in (0, 1, 2), p.stdout[-2000:] + p.stderr[-2000:]  # a verdict
    facts = facts_from_dict(json.loads(saved.read_text())).horovod
    assert facts.source == "probe" and facts.version == printed.version == HOROVOD
    assert [(f.name, f.available) for f in facts.frameworks] == [
        (f.name, f.available) for f in printed.frameworks]
    assert (facts.controllers, facts.tensor_ops) == (printed.controllers, printed.tensor_ops)
    assert (facts.controllers, facts.tensor_ops) == (("Gloo",), ("Gloo",))
    # what -cb does not print: the torch it was built against (horovod/metadata.json)
    torch = {f.name: f for f in facts.frameworks}["torch"]
    assert torch.built_with == torch.installed == "2.13.0+cpu" and facts.gpu == ""
    # the clean answer is kept for the next run, as read
    [kept] = (tmp_path / "cache").glob("horovod-*.json")
    assert horovod_from_dict(json.loads(kept.read_text())) == facts
    result = by_check(report)["horovod"]
    assert result["status"] == "pass"
    assert result["message"].startswith(f"Horovod {HOROVOD}: frameworks PyTorch; controllers "
                                        "Gloo; tensor operations Gloo (built against the "
                                        "installed torch 2.13.0+cpu)")


def test_gloo_only_horovod_under_mpirun_is_named_for_running_each_rank_alone(hvd, tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    report = tmp_path / "r.json"
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    p = run(hvd, "mpirun", *root, "--oversubscribe", "-np", "2", str(hvd.bin / "envcheck"),
            "verify", "job", "--horovod", "--timeout", "60", "--json", str(report),
            cwd=tmp_path)
    assert p.returncode == 2, p.stdout[-3000:] + p.stderr[-3000:]  # ExitCode.FAIL
    got = by_check(report)
    size = got["job.horovod"]
    assert size["status"] == "fail" and size["node"] == "rank 0, rank 1"
    assert size["message"] == ("hvd.size() is 1 on ranks 0, 1, but openmpi says 2; its "
                               "all-reduce summed 1 on rank 0, 2 on rank 1, not 3")
    assert "no MPI controller" in size["fix"]
    assert got["job.allreduce.gloo"]["status"] == "pass"  # envcheck's own group is whole
    failed = [r["check"] for r in json.loads(report.read_text())["results"]
              if r["status"] == "fail"]
    assert failed == ["job.horovod"], failed


def test_horovod_built_against_one_torch_beside_another_torch_is_named(hvd, tmp_path):
    other = beside_other_torch(hvd)
    report, saved = tmp_path / "r.json", tmp_path / "facts.json"
    p = run(other, str(other.bin / "envcheck"), "verify", "node", "--json", str(report),
            "--save-facts", str(saved), cwd=tmp_path, timeout=300)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]  # a failed check
    torch = {f.name: f for f in facts_from_dict(json.loads(saved.read_text())).horovod.frameworks
             }["torch"]
    assert torch.built_with == "2.13.0+cpu" and torch.installed.startswith(OTHER_TORCH)
    result = by_check(report)["horovod"]
    assert result["status"] == "fail"
    assert result["message"].startswith(
        f"Horovod {HOROVOD}'s horovod.torch was built against torch 2.13.0+cpu, but torch "
        f"{torch.installed} is installed: horovod.torch imports, and Horovod only warns"
    ), result["message"]  # what 0.28.1 does beside 2.14.1: no undefined symbol at import
    assert result["fix"].startswith(f"rebuild Horovod against the installed torch "
                                    f"{torch.installed}: HOROVOD_WITH_PYTORCH=1"), result["fix"]
