"""TensorFlow's CUDA build on real GPUs (marker gpu; run on a GPU machine whose environment has
`tensorflow[and-cuda]`; skipped where TensorFlow does not import here).

    pip install 'tensorflow[and-cuda]==2.21.0'   # TensorFlow's wheel and its CUDA 12 wheels
    python3 -m pytest -m gpu tests/gpu/test_tensorflow_gpu.py

verify node's tensorflow check must pass with a plain MirroredStrategy() over every GPU NVML
lists (after CUDA_VISIBLE_DEVICES), and its build's CUDA must not be newer than the driver's;
hiding the GPUs from CUDA (CUDA_VISIBLE_DEVICES=-1) must leave a passing run on one CPU device,
not a crash.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.verify.facts import collect_node_facts

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                       reason="TensorFlow is not installed here (pip install "
                       "'tensorflow[and-cuda]')"),
]
REPO = Path(__file__).resolve().parents[2]


def _tf(tmp_path: Path, **env: str) -> dict:
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "envcheck", "verify", "node", "--quiet", "--json",
                    str(out), "--save-facts", str(tmp_path / "f.json")],
                   env={**os.environ, "PYTHONPATH": str(REPO), **env}, capture_output=True,
                   text=True, timeout=300)
    (tf,) = [r for r in json.loads(out.read_text())["results"] if r["check"] == "tensorflow"]
    return tf


def test_tensorflow_spans_every_visible_gpu(tmp_path):
    facts = collect_node_facts(tensorflow_probe=False)
    visible = len(facts.visible_gpu_uuids)
    assert visible, "no GPU visible to NVML"
    tf = _tf(tmp_path)
    assert tf["status"] == "pass", tf
    assert f"MirroredStrategy over {visible} GPU(s), cross-replica sum " \
           f"{visible * (visible + 1) // 2}" in tf["message"], tf["message"]
    saved = json.loads((tmp_path / "f.json").read_text())["tensorflow"]
    assert saved["cuda_build"] and saved["cuda"] and saved["gpus"] == visible, saved


def test_tensorflow_with_gpus_hidden_runs_on_the_cpu(tmp_path):
    tf = _tf(tmp_path, CUDA_VISIBLE_DEVICES="-1")
    assert tf["status"] == "pass", tf
    assert "logical CPU device(s)" in tf["message"], tf["message"]
