"""verify cluster on real GPUs (marker gpu; skipped without a GPU; run on the device machine).

The embedded default is a LocalCUDACluster there (needs dask-cuda); the shared-GPU case needs
only distributed: two `dask worker` processes both given CUDA_VISIBLE_DEVICES=0.
Run: python3 -m pytest -m gpu tests/gpu/test_cluster_gpu.py
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from tests.support.subprocess_cluster import run_envcheck, start_cluster

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def _results(report: dict, check: str) -> list[dict]:
    return [r for r in report["results"] if r["check"] == check]


@pytest.mark.skipif(importlib.util.find_spec("dask_cuda") is None, reason="needs dask-cuda")
def test_embedded_default_is_a_local_cuda_cluster_with_one_worker_per_gpu(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    proc, _ = run_envcheck("verify", "cluster", "--smoke", "none", "--json", str(out), timeout=300)
    report = json.loads(out.read_text())
    assert report["environment"]["cluster"].startswith("embedded LocalCUDACluster")
    for check in ("pinning.visible", "pinning.shared", "pinning.unused"):
        assert {r["status"] for r in _results(report, check)} == {"pass"}, report["results"]
    # the cluster's own CUDA contexts are not "other people's" processes
    assert not [r for r in _results(report, "busy-gpus") if r["status"] == "fail"]
    assert proc.returncode in (ExitCode.OK, ExitCode.WARN), proc.stderr[-2000:]


def test_two_workers_forced_onto_one_gpu_fail_pinning(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        for name in ("a", "b"):
            cluster.add_worker(name, env={"CUDA_VISIBLE_DEVICES": "0"})
        names = cluster.wait_for_workers(["a", "b"])
        out = tmp_path / "out.json"
        proc, _ = run_envcheck(
            "verify", "cluster", cluster.address, "--smoke", "none", "--json", str(out)
        )
        assert proc.returncode == ExitCode.FAIL, proc.stderr[-2000:]
        report = json.loads(out.read_text())
        (shared,) = [r for r in _results(report, "pinning.shared") if r["status"] == "fail"]
        assert names["a"] in shared["message"] and names["b"] in shared["message"]
        assert "GPU 0" in shared["message"]
    finally:
        cluster.stop()


def _worker_state() -> dict:
    """On a worker: torch imported by the warm thread, and whether this process holds a CUDA
    context on its GPU (NVML lists it), as dask-cuda's own preload makes it."""
    import os
    import sys
    import threading
    import time

    import pynvml

    from envcheck.verify.smoke.warm import THREAD

    deadline = time.monotonic() + 120
    while any(t.name == THREAD for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.2)
    pynvml.nvmlInit()
    first = os.environ["CUDA_VISIBLE_DEVICES"].split(",")[0]
    handle = pynvml.nvmlDeviceGetHandleByIndex(int(first))
    pids = {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
    return {"torch": "torch" in sys.modules, "context": os.getpid() in pids}


@pytest.mark.skipif(importlib.util.find_spec("dask_cuda") is None, reason="needs dask-cuda")
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_warm_imports_reach_local_cuda_cluster_workers_beside_dask_cudas_preload() -> None:
    """dask-cuda appends its own preload (and its argv) to every worker's: the warm modules
    are imported and dask-cuda's preload still creates each worker's CUDA context."""
    from envcheck.verify.cluster.connect import embedded_cluster

    with embedded_cluster(gpus=None, warm=("torch",)) as client:
        states = client.run(_worker_state)
    assert states and all(s["torch"] for s in states.values()), states
    assert all(s["context"] for s in states.values()), states
