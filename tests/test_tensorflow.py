"""The TensorFlow probe against a real tensorflow-cpu, in a venv of its own (cached by its pins,
as the old environments are): verify node run there reads TensorFlow's build and runs a
MirroredStrategy over two logical CPU devices with a known-answer cross-replica sum."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.old_envs import EnvSpec, build_env
from tests.report_schema import validated

pytestmark = pytest.mark.slow

TF_ENV = EnvSpec("tensorflow-cpu", f"{sys.version_info[0]}.{sys.version_info[1]}",
                 ("tensorflow-cpu==2.21.0",), "TensorFlow's CPU build, as INFRA.md's")


@pytest.fixture(scope="module")
def tf_env():
    return build_env(TF_ENV)


def test_verify_node_in_a_tensorflow_env_runs_a_mirrored_strategy_with_a_known_sum(
    tf_env, tmp_path
):
    out = tmp_path / "r.json"
    p = subprocess.run([str(tf_env.prefix / "bin" / "envcheck"), "verify", "node", "--json",
                        str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    report = validated(out)
    (tf,) = [r for r in report["results"] if r["check"] == "tensorflow"]
    assert tf["status"] == "pass", (tf, p.stderr[-1500:])
    assert tf["message"] == ("TensorFlow 2.21.0 (CPU build): MirroredStrategy over 2 logical "
                             "CPU device(s), cross-replica sum 3")
    saved = tmp_path / "facts.json"
    subprocess.run([str(tf_env.prefix / "bin" / "envcheck"), "verify", "node", "--save-facts",
                    str(saved), "--quiet", "--skip", "tensorflow"], capture_output=True,
                   text=True, timeout=300)
    facts = json.loads(saved.read_text())["tensorflow"]
    assert (facts["version"], facts["cuda_build"], facts["gpus"]) == ("2.21.0", False, 0)
    assert (facts["replicas"], facts["reduce"], facts["logical_cpus"]) == (2, 3.0, True)


def test_the_main_test_env_has_no_tensorflow_and_the_check_says_so(tmp_path):
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "envcheck", "verify", "node", "--json", str(out),
                    "--quiet"], capture_output=True, text=True, timeout=300)
    (tf,) = [r for r in validated(out)["results"] if r["check"] == "tensorflow"]
    assert (tf["status"], tf["message"]) == ("skip", "TensorFlow is not installed here")
