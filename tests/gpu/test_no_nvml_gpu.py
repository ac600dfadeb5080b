"""A real GPU machine with NVML made unusable: verify node still sees the driver and the GPUs
from /proc and fails every GPU check naming the missing part (marker gpu; run on the device).

    python3 -m pytest -m gpu tests/gpu/test_no_nvml_gpu.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.verify.facts import collect_node_facts

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
GPU_CHECKS = ("driver", "gpus", "cuda-visible-devices", "busy-gpus", "compute-capability",
              "compiled-arch", "ecc", "pcie", "nvlink", "clocks", "persistence", "mig",
              "compute-mode")


def _verify_node(tmp_path: Path, blocker: str) -> tuple[int, dict]:
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "pynvml.py").write_text(blocker)
    env = {**os.environ, "PYTHONPATH": f"{blocked}{os.pathsep}{REPO}",
           "ENVCHECK_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--no-plugins", "--quiet",
         "--json", str(out)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(out.read_text())


def test_without_pynvml_the_gpu_checks_fail_and_name_it(tmp_path: Path) -> None:
    nvml = collect_node_facts()  # this process: NVML works here
    rc, report = _verify_node(
        tmp_path, "raise ModuleNotFoundError(\"No module named 'pynvml'\", name='pynvml')\n"
    )
    assert rc == 2
    by = {}
    for r in report["results"]:
        by.setdefault(r["check"], []).append(r)
    for check in GPU_CHECKS:
        assert by[check] and all(r["status"] == "fail" for r in by[check]), (check, by[check])
        assert "pip install 'cluster-envcheck[gpu]'" in by[check][0]["fix"]
    driver = by["driver"][0]["message"]
    # the driver version and GPU count as /proc gives them, the same NVML gives this process
    assert f"NVIDIA driver {nvml.driver_version} is loaded with {len(nvml.gpus)} GPU(s)" in driver
    assert nvml.gpus[0].name in driver
    assert "the pynvml module (nvidia-ml-py) is not importable" in driver
    assert re.search(rf"\b{len(nvml.gpus)} GPU\(s\) in /proc/driver/nvidia/gpus",
                     by["gpus"][0]["message"])

