"""verify node --level 2 on a terminal, on real GPUs (marker gpu; skipped without a GPU or
torch): the progress line names the framework and how many GPUs load, counts them per phase,
and is erased before the report; with stderr a pipe, nothing of it.

Run on the device machine: python3 -m pytest -m gpu tests/gpu/test_progress_gpu.py
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from envcheck.verify.facts import collect_node_facts
from tests.support.terminal import run_envcheck

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]
ARGS = ["verify", "node", "--level", "2", "--load-seconds", "2"]


@pytest.fixture(scope="module")
def gpus() -> int:
    n = len(collect_node_facts().visible_gpu_uuids)
    if n == 0:
        pytest.skip("no visible GPU")
    return n


def test_a_terminal_sees_the_load_on_every_gpu(gpus: int) -> None:
    rc, out, err = run_envcheck(ARGS, tty=True, timeout=600)
    assert rc in (0, 1), err.decode(errors="replace")  # 1: a warning on a busy machine
    many = f"{gpus} GPU" + ("s" if gpus != 1 else "")
    assert f"\rlevel 2 load: torch on {many}".encode() in err, err[-2000:]
    phases = re.findall(rb"level 2 load: torch on [^:]+: ([^\r\x1b]*)", err)
    assert any(b"copying" in p or b"GEMM" in p for p in phases), phases[-5:]
    assert b"\r\x1b[K" in err  # erased before the report
    assert b"level 2 load" not in out and b"\r" not in out


def test_a_pipe_sees_no_progress(gpus: int) -> None:
    rc, out, err = run_envcheck(ARGS, tty=False, timeout=600)
    assert rc in (0, 1), err.decode(errors="replace")
    assert b"level 2 load: torch on" not in err and b"\r" not in err
