"""Smoke tests: which apply (pure, from facts), and the real thing on a LocalCluster: known
answers, a task hung past its timeout, and workers that do not have envcheck installed."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from envcheck.errors import BadInput
from envcheck.report import Status
from envcheck.verify.needs import package_version
from envcheck.verify.smoke.run import SmokeRun
from envcheck.verify.smoke.suite import (
    SMOKE_TESTS,
    SmokeTest,
    applicability,
    gpu_kernel_expected,
    result,
    run_smoke,
)
from tests.support.deadlines import HANG
from tests.support.factories import H200, no_driver_node, node, with_env
from tests.support.smoke_cluster import local_client, local_cluster_fixture  # noqa: F401  (the fixture)

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_XGBOOST = importlib.util.find_spec("xgboost") is not None
# a smoke timeout a test never reaches: what ends its wait within HANG is not the timeout
NEVER = 10 * HANG


def cpu_worker(**packages: str) -> object:
    return no_driver_node(
        role="worker", packages={"numpy": "2.4.6", "dask": "2026.8.0", **packages}
    )


def gpu_worker(index: int, **packages: str) -> object:
    base = node(2, H200, role="worker", packages={"numpy": "2.4.6", **packages})
    return with_env(base, CUDA_VISIBLE_DEVICES=f"{index},{1 - index}")


def imports_fine(module: str) -> str:
    return ""


# --- which tests apply (pure) -------------------------------------------------------------


def test_gpu_tests_skip_on_cpu_workers_and_say_why():
    facts = {"tcp://a:1": cpu_worker(cupy="14.2.0"), "tcp://a:2": cpu_worker(cupy="14.2.0")}
    skip = applicability(SMOKE_TESTS["gpu-kernel"], facts, imports_fine)
    assert skip is not None and skip.status is Status.SKIP
    assert skip.message == (
        "no GPU workers: none of 2 sees a GPU "
        "(NVML: NVML did not start: NVML Shared Library Not Found)"
    )
    assert skip.check == "smoke.gpu-kernel" and skip.group == "smoke"


def test_package_absent_on_every_worker_skips_even_if_the_client_has_it():
    facts = {"tcp://a:1": cpu_worker(), "tcp://a:2": cpu_worker()}
    skip = applicability(SMOKE_TESTS["xgboost"], facts, imports_fine)
    assert skip is not None and skip.status is Status.SKIP
    assert skip.message == "xgboost is not installed on the workers"
    dask_cudf = applicability(SMOKE_TESTS["dask-cudf"], {"tcp://g:1": gpu_worker(0)}, imports_fine)
    assert dask_cudf is not None and dask_cudf.message == "cudf is not installed on the workers"


def test_package_on_some_workers_only_fails_naming_the_others():
    facts = {"tcp://a:1": cpu_worker(torch="2.13.0"), "tcp://a:2": cpu_worker()}
    fail = applicability(SMOKE_TESTS["torch-ddp"], facts, imports_fine)
    assert fail is not None and fail.status is Status.FAIL
    assert fail.message == "torch is installed on some workers but not on tcp://a:2"
    assert "every worker" in fail.fix


def test_distribution_names_of_one_import_are_recognised():
    assert package_version(cpu_worker(**{"xgboost-cpu": "3.2.0"}), "xgboost") == "3.2.0"
    assert package_version(cpu_worker(**{"py-xgboost": "2.0.3"}), "xgboost") == "2.0.3"
    assert package_version(cpu_worker(**{"cupy-cuda13x": "14.2.0"}), "cupy") == "14.2.0"
    assert package_version(cpu_worker(**{"dask-cudf-cu12": "24.4.1"}), "dask-cudf") == "24.4.1"
    assert package_version(cpu_worker(pytorch="2.1.0"), "torch") == "2.1.0"
    assert package_version(cpu_worker(**{"cupyx-extra": "1"}), "cupy") is None
    assert (
        applicability(
            SMOKE_TESTS["gpu-kernel"], {"g": gpu_worker(0, **{"numba-cuda": "0.20"})}, imports_fine
        )
        is None
    )


def test_unknown_packages_do_not_skip():
    # a collector that could not list packages proves nothing absent: run and let it fail
    blind = dataclasses.replace(cpu_worker(), packages={}, python_packages={})
    assert applicability(SMOKE_TESTS["xgboost"], {"tcp://a:1": blind}, imports_fine) is None


def test_client_import_failure_skips_with_the_reason():
    facts = {"tcp://a:1": cpu_worker(xgboost="3.2.0")}
    skip = applicability(
        SMOKE_TESTS["xgboost"],
        facts,
        lambda m: "ModuleNotFoundError: No module named 'pyarrow'" if m == "xgboost.dask" else "",
    )
    assert skip is not None and skip.status is Status.SKIP
    assert skip.message == (
        "xgboost.dask does not import on the client "
        "(ModuleNotFoundError: No module named 'pyarrow')"
    )


def test_ddp_skips_when_two_workers_share_one_process():
    one = cpu_worker(torch="2.13.0")
    skip = applicability(
        SMOKE_TESTS["torch-ddp"], {"tcp://a:1": one, "tcp://a:2": one}, imports_fine
    )
    assert skip is not None and skip.status is Status.SKIP
    assert "share one process" in skip.message and "one process per rank" in skip.message


def test_ddp_uses_nccl_over_gpu_workers_only():
    from envcheck.verify.smoke.ddp import plan_ranks

    facts = {
        "tcp://g:2": dataclasses.replace(gpu_worker(1, torch="2.11.0"), pid=2),
        "tcp://g:1": dataclasses.replace(gpu_worker(0, torch="2.11.0"), pid=1),
        "tcp://c:1": cpu_worker(torch="2.11.0"),
    }
    plan = plan_ranks(facts)
    assert plan.backend == "nccl" and plan.workers == ("tcp://g:1", "tcp://g:2")


def test_unknown_smoke_id_is_bad_input():
    said = "unknown smoke test nope; choose from submit, resources, array"
    with pytest.raises(BadInput, match=said):
        run_smoke(None, {}, {"nope"})


def test_gpu_kernel_expected_sum_is_exact():
    n = 1000
    assert gpu_kernel_expected(n) == float(sum(3 * i * i + 1 for i in range(n)))


# --- on a real cluster --------------------------------------------------------------------


@pytest.mark.slow
def test_embedded_style_cluster_passes_cpu_tests_and_skips_gpu_tests(local_cluster):
    client, facts = local_cluster
    # a deadline for a hang, not a speed: xgboost's training took 62 s on a 2-core machine at
    # load 18 (every test expects PASS here; bench/ times the smoke tests)
    results = run_smoke(client, facts, timeout=300)
    by = {}
    for r in results:
        by.setdefault(r.check, []).append(r)
    assert [r.status for r in by["smoke.submit"]] == [Status.PASS, Status.PASS]
    assert sorted(r.node for r in by["smoke.submit"]) == sorted(facts)
    assert by["smoke.array"][0].status is Status.PASS
    for gpu in ("smoke.gpu-kernel", "smoke.dask-cudf"):
        assert by[gpu][0].status is Status.SKIP
        assert by[gpu][0].message.startswith("no GPU workers: none of 2 sees a GPU")
    xgb = by["smoke.xgboost"]
    if HAS_XGBOOST and importlib.util.find_spec("pyarrow"):
        assert xgb[0].status is Status.PASS, xgb[0].message
        assert "device=cpu" in xgb[0].message
    else:
        assert xgb[0].status is Status.SKIP
    ddp = by["smoke.torch-ddp"]
    if HAS_TORCH:
        assert [r.status for r in ddp] == [Status.PASS, Status.PASS], [r.message for r in ddp]
        assert "over gloo" in ddp[0].message and "sum 3" in ddp[0].message
    else:
        assert ddp[0].status is Status.SKIP
    skorch = by["smoke.skorch"]
    if HAS_TORCH and importlib.util.find_spec("skorch"):
        assert [r.status for r in skorch] == [Status.PASS, Status.PASS], [r.message for r in skorch]
        assert sorted(r.node for r in skorch) == sorted(facts)
        assert all("on cpu: training accuracy" in r.message for r in skorch)
    else:
        assert skorch[0].status is Status.SKIP
    dispatched = by["smoke.dask-pytorch-ddp"]
    if HAS_TORCH and importlib.util.find_spec("dask_pytorch_ddp"):
        assert [r.status for r in dispatched] == [Status.PASS, Status.PASS], [
            r.message for r in dispatched]
        assert sorted(r.message.split(" over ")[0] for r in dispatched) == ["rank 0/2", "rank 1/2"]
        assert all("gloo" in r.message and "sum 3" in r.message for r in dispatched)
    else:
        assert dispatched[0].status is Status.SKIP


def _held_until(release: Path):
    """A function that returns once ``release`` exists (at most ten minutes on): a wait only
    the test ends. Nested, so a worker gets it by value, as the smoke code ships."""
    path = str(release)

    def held() -> None:
        for _ in range(6000):
            if os.path.exists(path):
                return
            time.sleep(0.1)

    return held


def _hang(release: Path):
    def body(run: SmokeRun) -> list:
        """A task held on a worker far past the test's timeout, waited for the usual way."""
        fut = run.submit(_held_until(release), worker=run.workers[0])
        run.values([fut], "the sleeping task")
        return [result("hang", Status.PASS, "unreachable")]

    return body


def _ignores_deadline(release: Path):
    def body(run: SmokeRun) -> list:
        """A body stuck in a call that knows nothing of the deadline (a hung library call)."""
        _held_until(release)()
        return [result("stuck", Status.PASS, "unreachable")]

    return body


@pytest.mark.slow
def test_a_task_hung_past_its_timeout_fails_and_the_run_goes_on(local_cluster, tmp_path):
    client, facts = local_cluster
    release = tmp_path / "release"  # made when the test ends: the held ones return then
    tests = {
        "hang": SmokeTest("hang", "sleeps past its timeout", _hang(release)),
        "stuck": SmokeTest("stuck", "never returns", _ignores_deadline(release)),
        "submit": SMOKE_TESTS["submit"],
    }
    started = time.monotonic()
    try:
        results = run_smoke(client, facts, timeout=1.0, tests=tests)
        took = time.monotonic() - started
    finally:
        release.touch()
    assert took < HANG  # 1 s each, not the held ones' ten minutes
    hang, stuck, *submit = results
    assert hang.status is Status.FAIL
    assert hang.message.startswith("timed out after 1 s waiting for the sleeping task on tcp://")
    assert stuck.status is Status.FAIL and stuck.message == "timed out after 1 s"
    assert [r.status for r in submit] == [Status.PASS, Status.PASS]
    # the hung task was cancelled: the scheduler no longer counts it as running anywhere
    assert all(not tasks for tasks in client.processing().values())


def _kill_own_worker(run: SmokeRun) -> list:
    """A task that takes its worker process down (like the OOM killer would)."""
    fut = run.submit(os._exit, 1, worker=run.workers[0])
    run.values([fut], "the task")
    return [result("kill", Status.PASS, "unreachable")]


@pytest.mark.slow
def test_a_worker_dying_under_a_smoke_test_is_an_error_and_the_run_goes_on():
    import logging

    import dask

    from envcheck.verify.cluster.gather import gather_facts

    # one death marks the task as a killer at once (default: retried on 3 more workers)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        local_client(2, silence_logs=logging.CRITICAL) as client,
    ):
        facts = dict(gather_facts(client, 30).workers)
        # one at a time (alone), as a death under tests running at once reaches all of them
        tests = {
            "kill": SmokeTest("kill", "kills its worker", _kill_own_worker, alone=True),
            "array": dataclasses.replace(SMOKE_TESTS["array"], alone=True),
        }
        started = time.monotonic()
        killed, array = run_smoke(client, facts, timeout=NEVER, tests=tests)
        assert time.monotonic() - started < HANG  # the death is seen, not the timeout
    assert killed.status is Status.ERROR
    assert killed.message.startswith("KilledWorker: ")
    assert array.status is Status.PASS


BLOCKER = "raise ImportError('envcheck is not installed on this worker')\n"


@pytest.mark.slow
def test_smoke_tasks_run_on_workers_that_cannot_import_envcheck(tmp_path: Path):
    """Workers run the user's environment: the smoke code must travel by value."""
    from distributed import Client

    from envcheck.verify.cluster.gather import gather_facts

    (tmp_path / "blocker" / "envcheck").mkdir(parents=True)
    (tmp_path / "blocker" / "envcheck" / "__init__.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "blocker")}
    sched_file = tmp_path / "scheduler.json"
    common = dict(cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                "127.0.0.1:0",
                "--scheduler-file",
                str(sched_file),
            ],
            **common,
        )
    ]
    try:
        deadline = time.monotonic() + 30
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        "--scheduler-file",
                        str(sched_file),
                        "--nthreads",
                        "2",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ],
                    **common,
                )
            )
        with Client(scheduler_file=str(sched_file), timeout=30, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=30)
            # the blocker works: the workers really cannot import envcheck
            probe = client.run(lambda: importlib.util.find_spec("envcheck") and "found")
            assert set(probe.values()) == {"found"}  # a spec is found: the blocker package

            def import_envcheck() -> str:  # nested: shipped by value, like the smoke code
                try:
                    import envcheck  # noqa: F401
                except ImportError as e:
                    return str(e)
                return "imported"

            err = client.run(import_envcheck)
            assert set(err.values()) == {"envcheck is not installed on this worker"}
            facts = dict(gather_facts(client, 30).workers)
            selected = {"submit", "array"} | ({"torch-ddp"} if HAS_TORCH else set())
            results = run_smoke(client, facts, selected, timeout=60)
        assert results and all(r.status is Status.PASS for r in results), [
            (r.check, r.message) for r in results
        ]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=HANG)
            except subprocess.TimeoutExpired:
                p.kill()


def _sleep_then_kill(run: SmokeRun) -> list:
    """Sleep on the first worker; the test SIGKILLs that worker's process meanwhile."""
    fut = run.submit(time.sleep, 60, worker=run.workers[0])
    run.values([fut], "the sleeping task")
    return [result("sleep", Status.PASS, "unreachable")]


def _library_wait(run: SmokeRun) -> list:
    """Like a library call (xgboost, torch) that waits without our deadline or our helpers."""
    fut = run.submit(time.sleep, 60, worker=run.workers[0])
    fut.result()
    return [result("library", Status.PASS, "unreachable")]


@pytest.mark.slow
@pytest.mark.parametrize("body", [_sleep_then_kill, _library_wait])
def test_a_worker_killed_mid_smoke_is_an_error_naming_it_within_the_timeout(body):
    """SIGKILL from outside (the OOM killer, an admin), default retries: the pinned task would
    wait for its worker for ever; the run says which worker left, well within the timeout,
    and the next test runs on the workers that remain."""
    import logging
    import signal

    from envcheck.verify.cluster.gather import gather_facts

    with local_client(2, silence_logs=logging.CRITICAL) as client:
        facts = dict(gather_facts(client, 30).workers)
        victim = sorted(facts)[0]
        pid = facts[victim].pid
        assert pid and pid != os.getpid()
        # one at a time (alone): the next test runs on the workers that remain
        tests = {"sleep": SmokeTest("sleep", "sleeps on a worker", body, alone=True),
                 "submit": dataclasses.replace(SMOKE_TESTS["submit"], alone=True)}
        killer = threading.Timer(1.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        lost, *submit = run_smoke(client, facts, timeout=NEVER, tests=tests)
        took = time.monotonic() - started
        killer.join()
    assert lost.status is Status.ERROR and lost.node == victim
    assert lost.message.startswith(f"worker {victim} left the cluster during the test")
    assert took < HANG, took  # not the timeout (NEVER)
    assert [r.node for r in submit] == [a for a in sorted(facts) if a != victim]
    assert [r.status for r in submit] == [Status.PASS]


def test_a_smoke_test_named_in_smoke_that_cannot_run_warns_saying_why() -> None:
    facts = {"tcp://a:1": cpu_worker(), "tcp://a:2": cpu_worker()}
    (named,) = run_smoke(None, facts, {"xgboost"})
    assert named.status is Status.WARN and "xgboost is not installed" in named.message
    assert named.fix
    # every test that applies (--smoke all, the default): one that does not apply is a skip
    (unnamed,) = run_smoke(None, facts, None, tests={"xgboost": SMOKE_TESTS["xgboost"]})
    assert unnamed.status is Status.SKIP and "xgboost is not installed" in unnamed.message


def _meet_then_sleep(meeting: threading.Barrier):
    def body(run: SmokeRun) -> list:
        """Passes only when every test is running at the same time, then sleeps on every
        worker."""
        meeting.wait(timeout=HANG)
        futs = {a: run.submit(time.sleep, 1.5, worker=a) for a in run.workers}
        run.outcomes(futs, "a sleep")
        return [result("sleep", Status.PASS, "slept")]

    return body


@pytest.mark.slow
def test_independent_smoke_tests_run_at_once_and_each_result_has_its_seconds():
    import logging

    from envcheck.verify.cluster.gather import gather_facts

    meeting = threading.Barrier(3)  # broken (the bodies raise) unless all three meet at once
    with local_client(2, silence_logs=logging.CRITICAL, threads_per_worker=3) as client:
        facts = dict(gather_facts(client, 30).workers)
        tests = {f"sleep{i}": SmokeTest(f"sleep{i}", "sleeps", _meet_then_sleep(meeting))
                 for i in range(3)}
        got = run_smoke(client, facts, timeout=2 * HANG, tests=tests)
    assert [r.status for r in got] == [Status.PASS] * 3, [(r.check, r.message) for r in got]
    assert all(r.seconds is not None and r.seconds >= 1.5 for r in got)


def _warmed() -> bool:
    """The warm thread has ended with torch imported (a module is in sys.modules while its
    import is still running)."""
    from envcheck.verify.smoke.warm import THREAD

    warming = any(t.name == THREAD for t in threading.enumerate())
    return not warming and "torch.distributed" in sys.modules


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_embedded_workers_given_the_warm_preload_have_torch_imported_for_the_ddp_test():
    """The preload returns at once and the worker imports torch beside its work: the torch-ddp
    test then finds it imported (its import phase ~0 s) and still passes."""
    from envcheck.verify.cluster.connect import embedded_cluster
    from envcheck.verify.cluster.gather import gather_facts
    with embedded_cluster(n_workers=1, gpus=0, warm=("torch", "torch.distributed")) as client:
        deadline = time.monotonic() + 120
        while not all(client.run(_warmed).values()):
            assert time.monotonic() < deadline, "the workers never imported torch"
            time.sleep(0.2)
        facts = dict(gather_facts(client, 60).workers)
        ddp = run_smoke(client, facts, {"torch-ddp"}, timeout=60)
    assert [r.status for r in ddp] == [Status.PASS], [r.message for r in ddp]
    assert "import 0.0 s" in ddp[0].message, ddp[0].message
    assert "teardown" in ddp[0].message


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_torch_ddp_results_reach_the_client_without_importing_torch_there():
    """A rank's reply holds plain values: a torch object in it (torch.__version__ is one)
    would make the client import torch to unpickle it, seconds on a GPU host."""
    code = textwrap.dedent("""
        import sys
        from envcheck.verify.cluster.gather import gather_facts
        from envcheck.verify.smoke.suite import run_smoke
        from tests.support.smoke_cluster import local_client
        with local_client(1) as client:
            facts = dict(gather_facts(client, 60).workers)
            got = run_smoke(client, facts, {"torch-ddp"}, timeout=60)
        print([r.status.value for r in got], [r.message for r in got])
        print("torch" in sys.modules)
    """)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=240, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stderr[-2000:]
    assert lines[0].startswith("['pass']"), lines[0]
    assert lines[-1] == "False", "the client imported torch"


def test_a_test_without_client_imports_runs_while_anothers_import_is_under_way(
    tmp_path, monkeypatch
):
    """The client's imports for a test's graph run beside the tests: a test that needs none
    (the DDP ranks) does not wait for them. Here the import cannot finish until the other
    test has run; before, the imports ran first and this waited out the gate's deadline."""
    import types

    from envcheck.verify.cluster.gather import gather_facts

    gate = types.ModuleType("_envcheck_test_gate")
    gate.EVENT = threading.Event()
    monkeypatch.setitem(sys.modules, gate.__name__, gate)
    (tmp_path / "_envcheck_gated.py").write_text(
        "import _envcheck_test_gate\nRELEASED = _envcheck_test_gate.EVENT.wait(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def opens_the_gate(run):
        gate.EVENT.set()
        return [result("opens", Status.PASS, "ran")]

    def needs_the_import(run):
        return [result("needs", Status.PASS, "ran")]

    tests = {
        "needs": SmokeTest("needs", "imports a gated module", needs_the_import,
                           client_modules=("_envcheck_gated",)),
        "opens": SmokeTest("opens", "opens the gate", opens_the_gate, alone=True),
    }
    with local_client(1) as client:
        facts = dict(gather_facts(client, 60).workers)
        got = run_smoke(client, facts, tests=tests, timeout=60)
    released = sys.modules["_envcheck_gated"].RELEASED
    monkeypatch.delitem(sys.modules, "_envcheck_gated")
    assert [(r.check, r.status) for r in got] == [
        ("smoke.needs", Status.PASS), ("smoke.opens", Status.PASS)]
    assert released, "the gated import ran out its deadline: the other test waited for it"
