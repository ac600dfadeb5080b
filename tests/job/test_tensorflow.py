"""The TensorFlow probe against a real tensorflow-cpu (tests/support/tf_env.py's venv): verify node
run there reads TensorFlow's build and runs a MirroredStrategy over two logical CPU devices with a
known-answer cross-replica sum; on a node described (ENVCHECK_NVIDIA_ROOT: a real H100's /proc
files, a second GPU added) with two GPUs, the same real child builds a plain MirroredStrategy()
as a script would, gets one replica, and the check fails naming both numbers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_schema import validated
from tests.support.tf_env import tf_python, tf_run_env

pytestmark = [pytest.mark.slow, pytest.mark.oldenv]  # a cached venv of tensorflow-cpu
H100 = Path(__file__).parents[1] / "data" / "nvidia-proc" / "h100-open-580"


def _verify_node(tmp_path: Path, *argv: str, **env: str) -> dict:
    out = tmp_path / "r.json"
    p = subprocess.run([tf_python(), "-m", "envcheck", "verify", "node", "--json", str(out),
                        "--quiet", "--no-plugins", *argv], env=tf_run_env(**env),
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    return validated(out)


def _tf(report: dict) -> list[dict]:
    return [r for r in report["results"] if r["check"] == "tensorflow"]


def test_verify_node_in_a_tensorflow_env_runs_a_mirrored_strategy_with_a_known_sum(tmp_path):
    saved = tmp_path / "facts.json"
    (tf,) = _tf(_verify_node(tmp_path, "--save-facts", str(saved)))
    assert tf["status"] == "pass", tf
    assert tf["message"] == ("TensorFlow 2.21.0 (CPU build): MirroredStrategy over 2 logical "
                             "CPU device(s), cross-replica sum 3")
    facts = json.loads(saved.read_text())["tensorflow"]
    assert (facts["version"], facts["cuda_build"], facts["gpus"]) == ("2.21.0", False, 0)
    assert (facts["replicas"], facts["reduce"], facts["logical_cpus"]) == (2, 3.0, 2)


def test_on_a_node_with_two_gpus_the_cpu_build_runs_one_replica_and_fails(tmp_path):
    root = tmp_path / "nvroot"
    shutil.copytree(H100, root)
    gpus = root / "proc" / "driver" / "nvidia" / "gpus"
    info = (gpus / "0000:00:06.0" / "information").read_text()
    (gpus / "0000:00:07.0").mkdir()
    (gpus / "0000:00:07.0" / "information").write_text(
        info.replace("0000:00:06.0", "0000:00:07.0").replace("Minor: \t 0", "Minor: \t 1")
        .replace("GPU-5c83b59a", "GPU-5c83b59b"))
    # NVML cannot start on this GPU-less machine: the GPUs are the kernel driver's (/proc)
    messages = [r["message"] for r in _tf(_verify_node(
        tmp_path, ENVCHECK_NVIDIA_ROOT=str(root), ENVCHECK_CACHE_DIR=str(tmp_path / "c")))
        if r["status"] == "fail"]
    assert "TensorFlow 2.21.0 (CPU build) on a node with 2 visible GPU(s): it computes on the " \
           "CPU" in messages, messages
    assert ("TensorFlow 2.21.0 (CPU build): MirroredStrategy has 1 replica(s) where 2 GPU(s) "
            "are visible: training would silently use fewer devices") in messages, messages


def test_skip_tensorflow_skips_the_probe_and_the_main_env_has_none(tmp_path):
    (tf,) = _tf(_verify_node(tmp_path, "--skip", "tensorflow", "--save-facts",
                             str(tmp_path / "f.json")))
    assert tf["status"] == "skip"
    assert json.loads((tmp_path / "f.json").read_text())["tensorflow"]["version"] == ""
    out = tmp_path / "main.json"
    subprocess.run([sys.executable, "-m", "envcheck", "verify", "node", "--json", str(out),
                    "--quiet", "--no-plugins"], capture_output=True, text=True, timeout=300)
    (tf,) = _tf(validated(out))
    assert (tf["status"], tf["message"]) == ("skip", "not installed: TensorFlow")
