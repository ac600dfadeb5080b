"""ENVCHECK_CHANNEL_MIRRORS: a recipe naming a channel this machine cannot reach solves against
a mirror of it (served here over HTTP), and the lock keeps the channel's own URLs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from envcheck.errors import ExitCode
from envcheck.lockfile.read import read_lock
from tests.support.channel import demo_channel, write_recipe
from tests.support.condapkg import serve

ROOT = Path(__file__).resolve().parents[2]
# .invalid never resolves (RFC 2606): the channel itself is unreachable from anywhere
CHANNEL = "https://conda.example.invalid/demo"


def _build(recipe: Path, out: Path, mirrors: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ENVCHECK_CHANNEL_MIRRORS": mirrors}
    return subprocess.run([sys.executable, "-m", "envcheck", "build", str(recipe), "--out",
                           str(out), "--no-lint"], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip


def test_a_mirror_serves_the_solve_and_the_lock_keeps_the_channel(tmp_path: Path) -> None:
    mirror_dir = tmp_path / "mirror"
    demo_channel(mirror_dir)
    recipe = write_recipe(tmp_path, CHANNEL, "['python 3.9.*']")
    unreachable = _build(recipe, tmp_path / "none", "")
    assert unreachable.returncode == ExitCode.UNREACHABLE
    assert "DNS lookup failed" in unreachable.stderr
    with serve(mirror_dir) as url:
        done = _build(recipe, tmp_path / "locks", f"{CHANNEL}={url}")
    assert done.returncode == 0, done.stderr
    read = read_lock(tmp_path / "locks" / "demo.conda-lock.yml", "linux-64")
    python = next(p for p in read.packages if p.name == "python")
    assert python.version == "3.9.18" and python.url.startswith(CHANNEL + "/linux-64/")


def test_a_malformed_mirror_setting_is_one_line_bad_input(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, CHANNEL, "['python 3.9.*']")
    done = _build(recipe, tmp_path / "locks", "conda-forge")
    assert done.returncode == ExitCode.BAD_INPUT
    assert done.stderr.strip() == (
        "envcheck: ENVCHECK_CHANNEL_MIRRORS: 'conda-forge' is not CHANNEL_URL=MIRROR_URL "
        "(e.g. https://conda.anaconda.org/conda-forge=https://mirror.example/conda-forge)")
