"""Any copy of the tree works as a clone does: a tarball, an unpacked sdist or `git archive`
holds no .git (so no .gitignore applies), and may hold what `pip install .` left (build/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import envcheck

ROOT = Path(envcheck.__file__).resolve().parent.parent
BAD = "import os, sys\nx = 1;\n"  # F401 twice, E703: what an unlinted file trips on


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "envcheck-copy"
    shutil.copytree(ROOT / "envcheck", copy / "envcheck",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    assert not (copy / ".git").exists()
    return copy


def test_a_copy_without_git_is_a_checkout(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    done = subprocess.run(
        [sys.executable, "-I", "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); import envcheck.distribution as d; "
         "print(d.__file__); print(d.install_kind())", str(copy)],
        capture_output=True, text=True, check=True, cwd=tmp_path)
    where, kind = done.stdout.split()
    assert where.startswith(str(copy)) and kind == "checkout"


def test_ruff_skips_what_installs_and_venvs_leave_in_a_copy(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    for left in ("build/lib/envcheck", "dist", ".venv/lib", ".venv-py38/lib",
                 "cluster_envcheck.egg-info"):
        (copy / left).mkdir(parents=True)
        (copy / left / "left.py").write_text(BAD)
    ruff = Path(sys.executable).parent / "ruff"
    clean = subprocess.run([str(ruff), "check", "."], capture_output=True, text=True, cwd=copy)
    assert clean.returncode == 0, clean.stdout[-2000:]
    (copy / "envcheck" / "planted.py").write_text(BAD)  # the walk still lints the package
    dirty = subprocess.run([str(ruff), "check", "."], capture_output=True, text=True, cwd=copy)
    assert dirty.returncode == 1 and "envcheck/planted.py" in dirty.stdout
