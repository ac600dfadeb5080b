"""One venv with the real tensorflow-cpu for every TensorFlow test of a run (verify node's probe,
verify job's MultiWorkerMirroredStrategy under torchrun, plain processes and srun).

It is linked to this test environment (torch 2.13.0 from the machine's wheel, the test extra)
and has tensorflow-cpu and its dependencies of its own, which shadow ours; envcheck comes from
this checkout through PYTHONPATH (``tf_run_env``). Built once per run under the test env cache
(tests/support/old_envs.py: ENVCHECK_TEST_ENV_CACHE), keyed by its pins and the interpreter it
links, behind a lock that pytest-xdist workers share.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from tests.support.old_envs import _cache_root
from tests.support.subprocess_cluster import linked_venv, uv_install

ROOT = Path(__file__).resolve().parents[2]
TF_PINS = ("tensorflow-cpu==2.21.0",)  # INFRA.md's: 2.5 s import, 1.6 GB


@functools.cache
def tf_python() -> str:
    """The TensorFlow venv's interpreter, built on first use."""
    key = hashlib.sha256(json.dumps(
        [sys.executable, sysconfig.get_paths()["purelib"], TF_PINS]).encode()).hexdigest()[:12]
    prefix = _cache_root() / f"tensorflow-linked-{key}"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = prefix / ".envcheck-test-done"
        if not done.exists():
            shutil.rmtree(prefix, ignore_errors=True)
            python = linked_venv(prefix)
            uv_install(python, TF_PINS)
            done.write_text("\n".join(TF_PINS) + "\n")
    return str(prefix / "bin" / "python")


def tf_run_env(**extra: str) -> dict[str, str]:
    """The environment to run envcheck from this checkout with that interpreter."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", **extra}
