"""The layering is a contract the project checks itself: import-linter's contracts in
pyproject.toml ([tool.importlinter]: the entry points above resolve | provision | verify |
slurm, those above lockfile, lockfile above the shared modules; no verb's folder imports
another's), run with `lint-imports` on this tree. Without import-linter (the test extra has
it) the test skips, and fails under ENVCHECK_TESTS_REQUIRE_ALL=1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports")
    if exe is None:
        why = "lint-imports not found: install the test extras (import-linter)"
        if os.environ.get("ENVCHECK_TESTS_REQUIRE_ALL") == "1":
            pytest.fail(f"{why} (ENVCHECK_TESTS_REQUIRE_ALL=1)")
        pytest.skip(why)
    return exe


def _run(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_lint_imports(), "--no-cache", str(tree / "pyproject.toml")], cwd=tree,
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=str(tree)),
    )


def test_the_layers_and_the_verbs_independence_hold() -> None:
    done = _run(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 kept, 0 broken" in done.stdout


def test_an_import_up_the_layers_breaks_the_contract(tmp_path: Path) -> None:
    """The contract has teeth: a verify module importing the CLI, on a copy of the tree."""
    shutil.copytree(ROOT / "envcheck", tmp_path / "envcheck",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "envcheck" / "verify" / "plugins.py").open("a").write(
        "\n\ndef _up() -> None:\n    import envcheck.cli  # noqa: F401\n")
    done = _run(tmp_path)
    assert done.returncode != 0
    assert "envcheck.verify is not allowed to import envcheck.cli" in done.stdout
