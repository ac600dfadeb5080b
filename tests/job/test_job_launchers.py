"""verify job under real launchers on CPU ranks (gloo): torchrun, Open MPI's mpirun, ranks
started by hand with RANK/WORLD_SIZE (as pdsh or ssh loops do), and real failures: a rank from
another venv (another numpy), a rank that never starts, one SIGKILLed and one SIGSTOPped after
it answered the roll call."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.deadlines import HANG
from tests.support.old_envs import EnvSpec, build_env
from tests.support.ranks import arrived, free_port, start_ranks

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
ENVCHECK = str(BIN / "envcheck")
TIMEOUT = 20  # verify job --timeout in the failure tests (ranks start slowly on busy cores)


def results(path: Path) -> list[dict]:
    return [r for r in json.loads(path.read_text())["results"] if r["status"] != "skip"]


def _keeps_its_columns(stdout: str, ranks: str) -> None:
    """Rank 0's report in the launcher's pipe, as wide as a pipe without COLUMNS (100): the
    skew table keeps its columns, its ranks named once in its header."""
    lines = stdout.splitlines()
    assert max(map(len, lines)) <= 100, stdout
    header = [ln for ln in lines if re.search(rf"\W package\W+{ranks}\W+verdict\W*$", ln)]
    assert len(header) == 1, stdout
    assert any(re.search(r"\W numpy\W+\d[\w.+]*\W+ok\W*$", ln) for ln in lines), stdout


def _without_columns() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_torchrun_four_ranks_pass(tmp_path):
    report = tmp_path / "r.json"
    p = subprocess.run(
        [str(BIN / "torchrun"), "--nproc-per-node", "4", "--master-port", str(free_port()),
         "--no-python", ENVCHECK, "verify", "job", "--timeout", "60", "--json", str(report)],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=_without_columns(),
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    got = {r["check"]: r for r in results(report)}
    assert got["job.ranks"]["message"].startswith("4 of 4 ranks reported (torchrun)")
    assert got["job.allreduce.gloo"]["status"] == "pass"
    assert "known answer 10" in got["job.allreduce.gloo"]["message"]
    # one report: rank 0's (its verdict line first); the other ranks print nothing
    assert len(re.findall(r"^PASS +envcheck verify job: ", p.stdout, re.M)) == 1, p.stdout
    _keeps_its_columns(p.stdout, r"4 ranks: 0, 1, 2, \+1 more")


def test_mpirun_four_ranks_pass(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    report = tmp_path / "r.json"
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    p = subprocess.run(
        ["mpirun", *root, "--oversubscribe", "-np", "4", ENVCHECK, "verify", "job",
         "--timeout", "60", "--json", str(report)],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=_without_columns(),
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    got = {r["check"]: r for r in results(report)}
    assert got["job.ranks"]["message"].startswith("4 of 4 ranks reported (openmpi)")
    assert got["job.allreduce.gloo"]["status"] == "pass"
    # mpirun gives each rank a pseudo-terminal even when its own output is a pipe or a log:
    # the report that lands there is plain text
    assert re.search(r"^(PASS|WARN) +envcheck verify job: ", p.stdout, re.M), p.stdout[:500]
    assert "\x1b[" not in p.stdout, p.stdout[:500]
    _keeps_its_columns(p.stdout, r"4 ranks: 0, 1, 2, \+1 more")


def test_ranks_without_master_port_meet_past_a_foreign_server_on_the_derived_port(tmp_path):
    """Open MPI's variables and no MASTER_PORT: the port is derived from the job id. Something
    else (answering garbage) holds the first candidate: rank 0 takes the second, and rank 1,
    asking the first on its way, is not fooled."""
    from envcheck.verify.job.launch import launch_info
    from tests.job.test_job_rendezvous import _held

    def env(job: str, rank: int) -> dict[str, str]:
        return {"OMPI_MCA_ess_base_jobid": job, "OMPI_COMM_WORLD_RANK": str(rank),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": "2",
                "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}

    job = f"{os.getpid()}{time.monotonic_ns() % 10**6}"
    ports = launch_info(env(job, 0)).port_candidates
    base = {k: v for k, v in os.environ.items() if k not in ("MASTER_PORT", "MASTER_ADDR")}
    with _held(ports[0], "garbage") as accepted:
        procs = [subprocess.Popen(
            [ENVCHECK, "verify", "job", "--timeout", "60", "--json", str(tmp_path / f"r{r}.json")],
            env={**base, **env(job, r)}, cwd=tmp_path, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True) for r in (1, 0)]
        done = _finish(procs, time.monotonic())
    assert [code for code, _, _ in done] == [0, 0], done
    assert accepted, "rank 1 never asked the first candidate"
    assert done[0][2].strip() == ""  # rank 1 prints nothing, no c10d warning either
    where = json.loads((tmp_path / "r0.json").read_text())["environment"]["rendezvous"]
    assert where.startswith(f"127.0.0.1:{ports[1]} (derived from the launch's ids "
                            "(MASTER_PORT unset); candidate 2 of 6, store on port "), where


# the same CPU torch as the test env (the local wheel), another numpy: one rank's venv after a
# `pip install numpy==2.1.3` on one node
OTHER_NUMPY = EnvSpec("job-rank-numpy-2.1.3", "3.11", ("torch==2.13.0+cpu", "numpy==2.1.3"),
                      "a rank's venv with another numpy")


def test_a_rank_from_another_venv_with_another_numpy_fails_skew_naming_it(tmp_path):
    other = build_env(OTHER_NUMPY, extra=("--find-links", "/opt/wheels"))
    import numpy

    port = free_port()
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3"}
    procs = [subprocess.Popen(
        [str(envcheck), "verify", "job", "--timeout", "60", "--json", str(tmp_path / f"r{r}.json")],
        env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r, envcheck in enumerate((ENVCHECK, ENVCHECK, other.prefix / "bin" / "envcheck"))]
    done = _finish(procs, time.monotonic())
    assert [code for code, _, _ in done] == [2, 2, 2], done  # a failed check, on every rank
    failed = {r["check"]: r for r in results(tmp_path / "r0.json") if r["status"] == "fail"}
    assert list(failed) == ["job.skew.numpy"], failed
    assert failed["job.skew.numpy"]["node"] == "rank 2"
    assert failed["job.skew.numpy"]["message"] == (
        f"numpy differs: rank 2 has 2.1.3; rank 0 and rank 1 have {numpy.__version__}")


def _start(world: int, ranks: range, tmp_path: Path,
           slow: int = -1) -> tuple[int, list[subprocess.Popen]]:
    return start_ranks([ENVCHECK], world, ranks, tmp_path, TIMEOUT, slow)


def _finish(procs: list[subprocess.Popen], since: float) -> list[tuple[int, float, str]]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append((p.returncode, time.monotonic() - since, stdout + stderr))
    return out


def test_a_rank_that_never_starts_is_named_and_the_others_exit(tmp_path):
    port, procs = _start(3, range(2), tmp_path)  # rank 2 of 3 never runs
    arrived(port, 0)  # from here on, not Python's start-up and torch's import (slow on a
    t0 = time.monotonic()  # busy machine): the roll call's --timeout and the verdict
    done = _finish(procs, t0)
    assert [code for code, _, _ in done] == [3, 3], done
    assert max(s for _, s, _ in done) < HANG  # --timeout held: its 60 s default would not
    errors = results(tmp_path / "r0.json")
    assert [(r["check"], r["node"]) for r in errors] == [("job.ranks", "rank 2")]
    assert "rank 2 (host" in errors[0]["message"]
    assert f"did not arrive within {TIMEOUT} s" in errors[0]["message"]
    assert done[1][2].strip() == ""  # rank 1 prints nothing: rank 0 reported


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_rank_that_dies_or_hangs_is_named_and_the_others_exit(tmp_path, sig):
    port, procs = _start(3, range(3), tmp_path, slow=2)
    try:
        arrived(port, 2)
        time.sleep(1)  # rank 2 is in its import probe, the others in the gather
        t0 = time.monotonic()
        os.killpg(procs[2].pid, sig)
        done = _finish(procs[:2], t0)
    finally:
        os.killpg(procs[2].pid, signal.SIGKILL)
        procs[2].wait()
    assert [code for code, _, _ in done] == [3, 3], done
    assert max(s for _, s, _ in done) < HANG, done  # --timeout held: its 60 s default would not
    errors = results(tmp_path / "r0.json")
    named = [r for r in errors if r["node"] == "rank 2"]
    assert named and f"pid {procs[2].pid}" in named[0]["message"], errors
    assert "stopped answering" in named[0]["message"]
    assert not [r for r in errors if r["node"] in ("rank 0", "rank 1")], errors


def _warn_plugin(root: Path) -> Path:
    """A real plugin (entry point `envcheck.checks`) whose check warns on every rank."""
    (root / "envcheck_test_warn.py").write_text(
        "from envcheck.report import Result, Status\n"
        "def check(facts, exp):\n"
        "    return [Result('test.warn', Status.WARN, 'a warning on ' + facts.host,\n"
        "                   fix='none needed')]\n")
    dist = root / "envcheck_test_warn-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: envcheck-test-warn\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text("[envcheck.checks]\ntest-warn = "
                                           "envcheck_test_warn:check\n")
    return root


@pytest.mark.parametrize("strict", [False, True])
def test_a_warning_under_torchrun_does_not_fail_the_job_unless_strict(tmp_path, strict):
    plugin = _warn_plugin(tmp_path)
    report = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(plugin), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run(
        [str(BIN / "torchrun"), "--nproc-per-node", "3", "--master-port", str(free_port()),
         "--no-python", ENVCHECK, "verify", "job", "--timeout", "60", "--json", str(report),
         *(["--strict"] if strict else [])],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env,
    )
    got = json.loads(report.read_text())
    assert got["status"] == "warn"
    assert [r["check"] for r in got["results"] if r["status"] == "warn"] == ["test.warn"]
    if strict:
        assert p.returncode != 0 and got["exit_code"] == 1
        assert "exitcode  : 1" in p.stderr  # torchrun's own summary of the failed ranks
        return
    assert p.returncode == 0 and got["exit_code"] == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = p.stdout + p.stderr
    assert "Traceback" not in out and "ChildFailedError" not in out
    # one compact report, rank 0's; the other ranks print nothing
    assert len(re.findall(r"^WARN +envcheck verify job: ", p.stdout, re.M)) == 1, p.stdout
    assert len(out.splitlines()) < 120, out
