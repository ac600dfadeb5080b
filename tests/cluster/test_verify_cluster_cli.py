"""`envcheck verify cluster` end to end, as a user runs it, against real subprocess clusters.

Each scenario checks the documented exit code and that the run ends within its timeout.
"""

from __future__ import annotations

import importlib.metadata
import json
import signal
import time
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from tests.conftest import OTHER_MSGPACK
from tests.support.deadlines import HANG
from tests.support.ports import free_port
from tests.support.subprocess_cluster import DASK_TIMEOUTS_PAST_HANG, run_envcheck, start_cluster

pytestmark = pytest.mark.slow


def _report(path: Path) -> dict:
    report = json.loads(path.read_text())
    assert report["schema"] == "envcheck.report/1"
    return report


def _results(report: dict, check: str) -> list[dict]:
    return [r for r in report["results"] if r["check"] == check]


def _pip_lock(path: Path, packages: dict[str, str]) -> Path:
    """A conda-lock v1 file of pip entries, the shape conda-lock writes for pip dependencies."""
    entries = "".join(
        f"- name: {name}\n  version: '{version}'\n  manager: pip\n  platform: linux-64\n"
        f"  dependencies: {{}}\n  url: https://files.pythonhosted.org/{name}-{version}.whl\n"
        f"  hash:\n    sha256: '{'0' * 64}'\n  category: main\n  optional: false\n"
        for name, version in packages.items()
    )
    path.write_text(
        "version: 1\nmetadata:\n  content_hash:\n    linux-64: x\n  channels: []\n"
        "  platforms:\n  - linux-64\n  sources: []\npackage:\n" + entries
    )
    return path


# --- the README's main command (the run itself: tests/install/test_wheel_install.py) ----


def test_embedded_run_leaves_no_empty_workers_log_in_tmpdir(tmp_path: Path) -> None:
    """The embedded cluster's workers write to a log in $TMPDIR while it runs; a clean run's
    log is empty and is removed once the workers have ended."""
    import os
    import subprocess
    import sys

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.run([sys.executable, "-m", "envcheck", "verify", "cluster", "--quiet",
                           "--smoke", "submit"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == ExitCode.OK, proc.stdout[-2000:] + proc.stderr[-2000:]
    logs = list(tmp.glob("envcheck-workers-*.log"))
    assert all(p.stat().st_size for p in logs), [p.name for p in logs]


def test_embedded_bench_measures_tcp_and_says_why_ucx_is_missing(tmp_path: Path) -> None:
    import importlib.util

    out = tmp_path / "out.json"
    proc, _ = run_envcheck(
        "verify", "cluster", "--bench", "--smoke", "none", "--workers", "2", "--json", str(out),
        timeout=300,
    )
    report = _report(out)
    assert proc.returncode in (ExitCode.OK, ExitCode.WARN), proc.stderr[-2000:]
    names = [m["name"] for m in report["measurements"]]
    assert names[0] == "facts round"
    assert any(n.startswith("transfer tcp") for n in names), names
    assert all(m["value"] > 0 for m in report["measurements"])
    if importlib.util.find_spec("distributed_ucxx") is None:
        (ucx,) = _results(report, "bench.ucx")
        assert ucx["status"] == "skip" and "distributed-ucxx is not installed" in ucx["message"]
    else:
        assert any(n.startswith("transfer ucx") for n in names), names


# --- skew across environments, with workers that cannot import envcheck ----------------------


def test_skew_passes_for_identical_workers_and_fails_naming_the_odd_one(
    tmp_path: Path, venv_without_envcheck: str, venv_with_other_msgpack: str
) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        cluster.add_worker("main", extra=("--resources", "FOO=1"))
        cluster.add_worker("same", python=venv_without_envcheck)
        names = cluster.wait_for_workers(["main", "same"])

        from distributed import Client

        with Client(cluster.address, set_as_default=False, timeout=30) as client:
            can_import = client.run(
                lambda: __import__("importlib.util").util.find_spec("envcheck") is not None,
                workers=[names["same"]],
            )
        assert can_import == {names["same"]: False}

        out = tmp_path / "same.json"
        proc, _ = run_envcheck(
            "verify", "cluster", "--scheduler-file", str(cluster.scheduler_file),
            "--smoke", "resources", "--timeout", "20", "--json", str(out),
        )
        report = _report(out)
        assert proc.returncode in (ExitCode.OK, ExitCode.WARN), proc.stderr
        assert [r["status"] for r in _results(report, "skew")] == ["pass"]
        assert not [r for r in report["results"] if r["check"].startswith("skew.")]
        # the worker without envcheck is in the table, grouped with its identical peer
        assert any(names["same"] in c for c in report["tables"][0]["columns"])
        # resources (a smoke test): the annotated task ran only where FOO is advertised
        (res,) = _results(report, "smoke.resources")
        assert res["status"] == "pass" and res["node"] == names["main"]

        cluster.add_worker("odd", python=venv_with_other_msgpack)
        odd = cluster.wait_for_workers(["odd"])["odd"]
        out = tmp_path / "odd.json"
        proc, _ = run_envcheck(
            "verify", "cluster", cluster.address, "--smoke", "none", "--timeout", "20",
            "--json", str(out),
        )
        assert proc.returncode == ExitCode.FAIL, proc.stderr
        report = _report(out)
        (msgpack,) = _results(report, "skew.msgpack")
        ours = importlib.metadata.version("msgpack")
        assert msgpack["status"] == "fail" and msgpack["node"] == odd
        assert f"worker {odd} has {OTHER_MSGPACK}" in msgpack["message"]
        assert f"have {ours}" in msgpack["message"]
        row = next(r for r in report["tables"][0]["rows"] if r[0] == "msgpack")
        assert OTHER_MSGPACK in row and ours in row and row[-1] == "fail"

        # every worker against a lock: only the odd worker drifted from it
        lock = _pip_lock(tmp_path / "env.lock.yml", {"msgpack": ours})
        out = tmp_path / "lock.json"
        proc, _ = run_envcheck(
            "verify", "cluster", cluster.address, "--smoke", "none", "--lock", str(lock),
            "--no-plugins", "--json", str(out),
        )
        assert proc.returncode == ExitCode.FAIL, proc.stderr
        packages = {r["node"]: r for r in _results(_report(out), "packages")}
        assert set(packages) == {names["main"], names["same"], odd}
        assert packages[odd]["status"] == "fail"
        assert f"msgpack {OTHER_MSGPACK} (lock {ours})" in packages[odd]["message"]
        assert packages[names["main"]]["status"] == packages[names["same"]]["status"] == "pass"
    finally:
        cluster.stop()


# --- failures: each with its exit code, within its timeout ----------------------------------


def test_nothing_listening_is_unreachable_within_the_timeout() -> None:
    address = f"tcp://127.0.0.1:{free_port()}"
    proc, took = run_envcheck("verify", "cluster", address, "--timeout", "2",
                              env=DASK_TIMEOUTS_PAST_HANG)
    assert proc.returncode == ExitCode.UNREACHABLE
    assert f"envcheck: no scheduler answered at {address} within 2 s" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < HANG  # --timeout holds: distributed's own timeouts are 600 s here


def test_scheduler_without_workers_fails(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        out = tmp_path / "out.json"
        proc, _ = run_envcheck(
            "verify", "cluster", cluster.address, "--timeout", "5", "--json", str(out)
        )
        assert proc.returncode == ExitCode.FAIL, proc.stderr[-2000:]
        (workers,) = _results(_report(out), "workers")
        assert workers["status"] == "fail" and "no workers" in workers["message"]
    finally:
        cluster.stop()


# A preload that turns the worker into one that dies the moment verify asks it for facts:
# SIGKILL, as the OOM killer would, in the middle of the round.
_DIE_ON_RUN = """
import os, signal

def dask_setup(worker):
    async def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    worker.handlers["run"] = die
"""


def test_worker_killed_while_verify_runs_is_an_error_naming_it(tmp_path: Path) -> None:
    preload = tmp_path / "die_on_run.py"
    preload.write_text(_DIE_ON_RUN)
    cluster = start_cluster(tmp_path / "cluster")
    try:
        cluster.add_worker("healthy")
        cluster.add_worker("doomed", extra=("--preload", str(preload)))
        names = cluster.wait_for_workers(["healthy", "doomed"])
        out = tmp_path / "out.json"
        proc, took = run_envcheck(
            "verify", "cluster", cluster.address, "--smoke", "submit", "--timeout", "10",
            "--json", str(out),
        )
        assert proc.returncode == ExitCode.ERROR, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert took < 60
        assert cluster.workers["doomed"].wait(5) == -signal.SIGKILL
        report = _report(out)
        (err,) = _results(report, "facts")
        assert err["status"] == "error" and err["node"] == names["doomed"]
        assert "died or left" in err["message"]
        # the healthy worker was still judged and smoke-tested
        assert names["healthy"] in report["tables"][0]["columns"][-2]
        assert any(
            r["check"] == "smoke.submit" and r["node"] == names["healthy"] and r["status"] == "pass"
            for r in report["results"]
        )
    finally:
        cluster.stop()


def test_hung_worker_is_an_error_after_the_timeout_not_a_hang(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        cluster.add_worker("ok")
        cluster.add_worker("frozen")
        names = cluster.wait_for_workers(["ok", "frozen"])
        cluster.workers["frozen"].send_signal(signal.SIGSTOP)  # alive to the kernel, silent
        out = tmp_path / "out.json"
        t0 = time.monotonic()
        proc, took = run_envcheck(
            "verify", "cluster", cluster.address, "--smoke", "none", "--timeout", "3",
            "--json", str(out), timeout=60,
        )
        assert proc.returncode == ExitCode.ERROR, proc.stderr[-2000:]
        assert time.monotonic() - t0 < HANG  # the frozen worker never answers
        report = _report(out)
        (err,) = _results(report, "facts")
        assert err["node"] == names["frozen"]
        assert "no answer within 3 s" in err["message"] and "hung" in err["message"]
        assert names["ok"] in " ".join(report["tables"][0]["columns"])
    finally:
        cluster.stop()


def test_smoke_task_hanging_past_its_timeout_fails_in_time(tmp_path: Path) -> None:
    """The only worker thread is busy with someone else's task: the smoke task never starts."""
    from distributed import Client

    cluster = start_cluster(tmp_path / "cluster")
    try:
        cluster.add_worker("busy")
        cluster.wait_for_workers(["busy"])
        with Client(cluster.address, set_as_default=False, timeout=30) as other_user:
            blocker = other_user.submit(time.sleep, 600, pure=False)
            deadline = time.monotonic() + 30
            while not other_user.processing() or not any(other_user.processing().values()):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            out = tmp_path / "out.json"
            proc, took = run_envcheck(
                "verify", "cluster", cluster.address, "--smoke", "submit",
                "--smoke-timeout", "3", "--timeout", "10", "--json", str(out), timeout=60,
            )
            other_user.cancel(blocker)
        assert proc.returncode == ExitCode.FAIL, proc.stderr[-2000:]
        assert took < HANG  # the blocker holds the only thread for 600 s
        (smoke,) = _results(_report(out), "smoke.submit")
        assert smoke["status"] == "fail" and "timed out after 3 s" in smoke["message"]
    finally:
        cluster.stop()


# --- bad input: one line, exit 4, no cluster needed ------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["tcp://127.0.0.1:1", "--scheduler-file", "x.json"], "not both"),
        (["--scheduler-file", "/nonexistent/scheduler.json"], "scheduler.json does not exist"),
        (["foo://127.0.0.1:8786"], "unknown protocol 'foo'"),
        (["ucx://127.0.0.1:8786"], "distributed-ucxx"),
        (["tcp://127.0.0.1:1", "--timeout", "0"], "--timeout must be positive"),
        (["tcp://127.0.0.1:1", "--tls-ca-file", "/nonexistent/ca.pem"], "ca.pem does not exist"),
        (["--smoke", "submit,warp-drive"], "unknown smoke test warp-drive"),
        (["--smoke", "array\nsubmit"], "unknown smoke test 'array\\nsubmit'"),
        (["--smoke", "x" * 100_000], "unknown smoke test a str of"),
        (["tcp://127.0.0.1:1", "--workers", "2"], "needs no address"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(argv: list[str], needle: str, capsys) -> None:
    assert main(["verify", "cluster", *argv]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and err.startswith("envcheck: ")
