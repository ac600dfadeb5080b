"""Under ENVCHECK_TESTS_REQUIRE_ALL=1 (.ci/run) a test module whose import is missing fails:
a CI machine that lost a package cannot turn the suite green by skipping it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import pytest

pytest.importorskip("envcheck_no_such_module")


def test_never_runs():
    pass


def test_imports_inside():
    pytest.importorskip("envcheck_no_such_module")
"""


def _pytest(tmp_path: Path, strict: bool) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "ENVCHECK_TESTS_REQUIRE_ALL"}
    if strict:
        env["ENVCHECK_TESTS_REQUIRE_ALL"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize("strict", [True, False], ids=["require-all", "default"])
def test_a_missing_import_fails_only_when_everything_is_required(tmp_path: Path,
                                                                 strict: bool) -> None:
    done = _pytest(tmp_path, strict)
    if strict:
        assert done.returncode != 0, done.stdout
        assert "could not import 'envcheck_no_such_module'" in done.stdout
        assert "ENVCHECK_TESTS_REQUIRE_ALL=1" in done.stdout
    else:
        assert done.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, done.stdout  # all skipped
        assert "1 skipped" in done.stdout and "failed" not in done.stdout
