"""On a GPU machine: Slurm's GRES on the real /dev/nvidia* and NVML agree with the binding."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.slurm.cluster import Unavailable, single_node_slurm

pytestmark = pytest.mark.gpu


def test_generated_job_on_real_gpus_binds_each_worker_to_the_gpu_nvml_names(tmp_path):
    import pynvml

    pynvml.nvmlInit()
    n = min(int(pynvml.nvmlDeviceGetCount()), 2)
    pynvml.nvmlShutdown()
    if n < 2:
        pytest.skip("needs 2 GPUs")
    try:
        with single_node_slurm(gpus=n, real_gpus=True) as slurm:
            p = subprocess.run(
                [sys.executable, "-m", "envcheck", "slurm", "script", "--gpus-per-node", str(n),
                 "--env", sys.prefix, "--smoke", "submit,gpu-kernel", "--submit",
                 "--json", "r.json"],
                cwd=tmp_path, env=slurm.env, capture_output=True, text=True, timeout=300,
            )
    except Unavailable as e:
        pytest.skip(str(e))
    assert p.returncode in (0, 1), p.stdout + p.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    slurm_results = [r for r in report["results"] if r["group"] == "slurm"]
    assert all(r["status"] == "pass" for r in slurm_results), slurm_results  # NVML agrees too
    pinning = [r for r in report["results"] if r["check"] in ("pinning.shared", "pinning.unused")]
    assert pinning and all(r["status"] == "pass" for r in pinning)
