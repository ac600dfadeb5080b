"""py-rattler 0.28 can crash at interpreter exit after an in-process solve (SIGSEGV/SIGABRT,
'PyGILState_Release ... finalizing'; 7 of 40 bare runs here). envcheck solves in a child process
that never finalizes, so a user never sees it: 20 real `envcheck build` processes must all exit 0
(at that rate 20 bare runs all pass with probability (33/40)**20, about 2 %).
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.channel import demo_channel, write_recipe

RUNS = 20


@pytest.mark.slow
def test_twenty_builds_never_crash(tmp_path: Path) -> None:
    url = demo_channel(tmp_path / "ch")
    recipe = write_recipe(
        tmp_path, url, "[python=3.9, dask-cuda, cuml]",
        "exclude: [{name: cugraph, reason: conflicts with cuml}]\n",
    )  # fmt: skip

    def one(i: int) -> subprocess.CompletedProcess[str]:
        out = tmp_path / f"locks{i}"
        cmd = [sys.executable, "-m", "envcheck", "build", str(recipe), "--out", str(out), "--quiet"]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=2) as pool:  # CI has 2 cores
        runs = list(pool.map(one, range(RUNS)))
    bad = [
        (i, r.returncode, r.stderr[-300:])
        for i, r in enumerate(runs)
        if r.returncode != 0 or r.stderr.strip()
        or any(w in r.stdout + r.stderr for w in ("Segmentation", "Abort", "Fatal Python error"))
    ]  # fmt: skip
    assert not bad, bad
    locks = {(tmp_path / f"locks{i}" / "demo.linux-64.lock").read_bytes() for i in range(RUNS)}
    assert len(locks) == 1  # and every run wrote the same lock
