"""verify cluster against a Dask cluster started as its users start it, on the GPU host:

    dask scheduler --protocol ucx --scheduler-file F
    dask cuda worker --scheduler-file F          # one worker per GPU, under one launcher
    envcheck verify cluster --scheduler-file F

With UCX the `dask cuda worker` process (the workers' parent, their nanny) holds a CUDA
context on GPU 0; it, the workers and the scheduler are the cluster's own, so busy-gpus
passes, naming each. A process of another uid holding memory on one GPU still fails it.
Needs dask-cuda (and for UCX ucx-py or distributed-ucxx); skipped without them or a GPU.

    python -m pytest -q -m gpu tests/gpu/test_cluster_tree_gpu.py
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from envcheck.verify.facts.proctree import user_name
from tests.conftest import _gpu_count
from tests.support.gpus import HOLD_ONE, holder_argv, holding
from tests.support.subprocess_cluster import run_envcheck

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("dask_cuda") is None, reason="needs dask-cuda"),
]

START = 240.0  # workers register within this, or the test fails (only to catch a hang)


def _ucx() -> bool:
    """protocol="ucx" works here: distributed-ucxx serves it, or ucx-py under a distributed
    whose own UCX comm is not the deprecated stub that only raises."""
    if importlib.util.find_spec("distributed_ucxx"):
        return True
    if not importlib.util.find_spec("ucp"):
        return False
    import distributed.comm.ucx as own

    return not hasattr(own, "_raise_deprecated")


UCX = _ucx()
needs_ucx = pytest.mark.skipif(not UCX, reason="needs distributed-ucxx (or ucx-py with a "
                               "distributed that still serves UCX itself)")

# Waits, in a process of its own that exits before envcheck runs, until n workers registered.
WAIT = """
import sys
from distributed import Client
with Client(scheduler_file=sys.argv[1], timeout=60) as c:
    c.wait_for_workers(int(sys.argv[2]), timeout=float(sys.argv[3]))
"""


def _dask() -> list[str]:
    """This environment's `dask` command, as users type it; its module where no script is."""
    script = Path(sys.executable).parent / "dask"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dask"]


def _gpus() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return len([v for v in visible.split(",") if v.strip()]) if visible else _gpu_count()


def _start(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    out = open(log, "w")  # noqa: SIM115 - closed with the process
    # a session of its own: stop() ends the launcher and every worker under it
    return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                            start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, sig)
        end = time.monotonic() + 30
        while any(p.poll() is None for p in procs) and time.monotonic() < end:
            time.sleep(0.2)


@contextlib.contextmanager
def users_cluster(tmp: Path, protocol: str):
    """(scheduler file, scheduler, launcher): `dask scheduler` and `dask cuda worker` with
    every worker registered."""
    tmp.mkdir(parents=True, exist_ok=True)
    sched_file = tmp / "scheduler.json"
    n = _gpus()
    scheduler = _start([*_dask(), "scheduler", "--protocol", protocol, "--scheduler-file",
                        str(sched_file), "--port", "0", "--dashboard-address", ":0"],
                       tmp / "scheduler.log", tmp)
    procs = [scheduler]
    try:
        end = time.monotonic() + START
        while not sched_file.exists():
            assert scheduler.poll() is None, (tmp / "scheduler.log").read_text()[-3000:]
            assert time.monotonic() < end, "no scheduler file"
            time.sleep(0.1)
        launcher = _start([*_dask(), "cuda", "worker", "--scheduler-file", str(sched_file),
                           "--local-directory", str(tmp / "work")], tmp / "workers.log", tmp)
        procs.append(launcher)
        waited = subprocess.run([sys.executable, "-c", WAIT, str(sched_file), str(n),
                                 str(START)], capture_output=True, text=True,
                                timeout=START + 60, cwd=tmp)
        assert waited.returncode == 0, waited.stderr[-2000:] + \
            (tmp / "workers.log").read_text()[-3000:]
        yield sched_file, scheduler, launcher
    finally:
        _stop(procs)


def _gpu_pids() -> dict[int, int]:
    """pid -> the NVML index of a GPU it holds memory on (NVML; no CUDA context of ours)."""
    import pynvml

    pynvml.nvmlInit()
    try:
        out = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                out.setdefault(int(p.pid), i)
        return out
    finally:
        pynvml.nvmlShutdown()


def _verify(sched_file: Path, tmp: Path) -> tuple[int, dict, list[dict]]:
    out = tmp / "report.json"
    proc, _ = run_envcheck("verify", "cluster", "--scheduler-file", str(sched_file),
                           "--smoke", "none", "--json", str(out), timeout=600)
    assert out.exists(), proc.stderr[-3000:]
    report = json.loads(out.read_text())
    busy = [r for r in report["results"] if r["check"] == "busy-gpus"]
    assert busy, report["results"]
    return proc.returncode, report, busy


@pytest.mark.parametrize("protocol", [pytest.param("ucx", marks=needs_ucx), "tcp"])
def test_a_cluster_started_as_users_start_it_passes_busy_gpus(tmp_path, protocol):
    with users_cluster(tmp_path / "cluster", protocol) as (sched_file, scheduler, launcher):
        holders = _gpu_pids()
        rc, report, busy = _verify(sched_file, tmp_path)
    print(json.dumps(busy, indent=1))
    assert {r["status"] for r in busy} == {"pass"}, busy
    failed = [r for r in report["results"] if r["status"] in ("fail", "error")]
    assert rc in (ExitCode.OK, ExitCode.WARN) and not failed, failed
    text = " ".join(r["message"] for r in busy)
    if launcher.pid in holders:  # UCX: the launcher's own CUDA context
        nanny = f"GPU {holders[launcher.pid]} pid {launcher.pid}: nanny (dask cuda worker) above "
        assert nanny + (f"{_gpus()} workers" if _gpus() > 2 else "worker ") in text
    if scheduler.pid in holders:
        assert f"pid {scheduler.pid}: scheduler" in text
    assert " worker ucx://" in text if protocol == "ucx" else " worker tcp://" in text


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
@pytest.mark.skipif(not any(importlib.util.find_spec(m) for m in ("torch", "cupy")),
                    reason="needs torch or cupy")
def test_another_uids_process_on_one_gpu_still_fails_naming_it(tmp_path):
    target = _gpus() - 1
    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "HOME": "/nonexistent"}
    held = holding(holder_argv(HOLD_ONE, target, 512, as_nobody=True), env,
                   lambda pid: pid in _gpu_pids())
    protocol = "ucx" if UCX else "tcp"
    with held as (holder_pid, _), users_cluster(tmp_path / "cluster", protocol) as (sched_file, *_):
        rc, _, busy = _verify(sched_file, tmp_path)
    print(json.dumps(busy, indent=1))
    failed = [r for r in busy if r["status"] == "fail"]
    assert failed and rc == ExitCode.FAIL, busy
    for r in failed:
        foreign = r["message"].split(" (ours: ")[0]
        assert f"GPU {target} (" in foreign and f"pid {holder_pid} (" in foreign, r
        assert f"user {user_name(65534)}" in foreign
        # the holder is the only foreign process: nothing of the cluster is listed there
        assert foreign.count(" pid ") == 1, r
