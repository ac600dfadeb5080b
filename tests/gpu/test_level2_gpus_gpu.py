"""verify node --level 2 on every visible GPU at once, on real GPUs (marker gpu; skipped
without a GPU): each GPU's own GEMM figure, and a GPU whose memory another uid's process holds
(an ERROR naming that pid, exit 3) while the other GPUs are still judged.

Run on the device machine: python3 -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.verify.facts import collect_node_facts
from tests.support.gpus import HOLD_ALL, gpu_env, holder_argv, holding

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

HANG = 600  # seconds: only to catch a hang


def _level2(tmp_path: Path, *argv: str) -> tuple[int, dict, dict, str]:
    """verify node --level 2 as a whole process: exit code, report, saved facts, output."""
    out, saved = tmp_path / "node.json", tmp_path / "facts.json"
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--no-plugins", "--level", "2",
         "--json", str(out), "--save-facts", str(saved), *argv],
        capture_output=True, text=True, env=gpu_env(), timeout=HANG,
    )
    assert out.exists(), proc.stdout + proc.stderr
    return (proc.returncode, json.loads(out.read_text()), json.loads(saved.read_text()),
            proc.stdout + proc.stderr)


def _by_check(report: dict, check: str) -> list[dict]:
    return [r for r in report["results"] if r["check"] == check]


def test_level_2_on_every_visible_gpu_passes_with_each_gpu_s_own_gemm(tmp_path):
    n = len(collect_node_facts().gpus)
    rc, report, facts, text = _level2(tmp_path)
    print(text)
    assert [r["status"] for r in _by_check(report, "gpu-load")] == ["pass"] * n, text
    gemm = _by_check(report, "gemm")
    assert len(gemm) == 2 * n and all(r["status"] == "pass" for r in gemm), gemm
    runs: dict[int, list[dict]] = {}
    for run in facts["gemm"]:
        runs.setdefault(run["index"], []).append(run)
    assert sorted(runs) == list(range(n))
    for index, mine in runs.items():
        assert [r["dtype"] for r in mine] == ["float32", "bfloat16"], mine
        assert all(r["tflops"] > 0 and not r["error"] for r in mine), mine
        assert all(r["sm_clock_min_mhz"] for r in mine), mine  # NVML read it during its GEMM
        print(f"GPU {index}: " + ", ".join(f"{r['dtype']} {r['tflops']:.1f} TFLOPS"
                                           for r in mine))
    assert rc in (0, 1), text


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv (a holder under another uid)")
def test_gpu_0_held_by_another_uid_is_an_error_naming_its_pid_and_the_rest_judged(tmp_path):
    gpus = collect_node_facts().gpus
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent",
           "CUDA_VISIBLE_DEVICES": gpus[0].uuid, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}

    def listed(pid: int) -> bool:  # NVML lists the process shortly after the allocation
        return pid in [p.pid for p in collect_node_facts().gpus[0].processes]

    with holding(holder_argv(HOLD_ALL, as_nobody=True), env, listed) as (pid, ready):
        print(f"holder pid {pid} left {ready.split()[1]} MiB free on GPU 0")
        rc, report, _, text = _level2(tmp_path, "--allow-busy-gpus")
    print(text)
    errors = [r for r in report["results"] if r["status"] == "error"]
    assert errors and all(r["check"] in ("gpu-load", "gemm") for r in errors), errors
    assert all(r["message"].startswith(("GPU 0: the load could not run: out of memory",
                                     "GPU 0: the multiplies could not run: out of memory")) and
               f"pid {pid} " in r["message"] and "MiB left" in r["message"]
               for r in errors), errors
    judged = _by_check(report, "gpu-load") + _by_check(report, "gemm")
    assert not [r for r in judged if r["status"] == "fail"], judged
    # GPU 0's link is judged idle (the load never ran there): never a fail under load
    assert "fail" not in [r["status"] for r in _by_check(report, "pcie")], report["results"]
    for index in range(1, len(gpus)):  # the others: loaded and multiplied, each judged
        mine = [r for r in judged if r["message"].startswith((f"GPU {index}:",
                                                              f"GPU {index} ("))]
        assert [r["status"] for r in mine] == ["pass"] * 3, mine
    assert rc == 3 and report["exit_code"] == 3, text
