"""Plugins through a real entry point: a dist-info with entry_points.txt on sys.path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.report import Status
from envcheck.verify.node.checks import run_node_checks
from envcheck.verify.plugins import load_plugins
from tests.support.factories import expect, healthy_a100x8

PLUGIN_MODULE = '''
from envcheck.report import Result, Status


def check_hostname(facts, exp):
    """Site rule: GPU nodes are named gpu-*."""
    ok = facts.host.startswith("gpu-")
    return [Result("site-hostname", Status.PASS if ok else Status.FAIL, f"host {facts.host}")]


def check_raises(facts, exp):
    raise RuntimeError("plugin bug")


NOT_A_FUNCTION = 42
'''

ENTRY_POINTS = """\
[envcheck.checks]
site-hostname = envcheck_site_checks:check_hostname
site-raises = envcheck_site_checks:check_raises
site-missing = envcheck_site_checks_gone:check
site-number = envcheck_site_checks:NOT_A_FUNCTION
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "envcheck_site_checks.py").write_text(PLUGIN_MODULE)
    dist = tmp_path / "envcheck_site_checks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: envcheck-site-checks\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("envcheck_site_checks", None)
    return tmp_path


def test_load_plugins_returns_loadable_ones_and_errors_naming_the_others(plugin_dir):
    plugins, errors = load_plugins()
    names = {p.name for p in plugins}
    assert {"site-hostname", "site-raises"} <= names
    by = {e.check: e for e in errors}
    assert by["plugin:site-missing"].status is Status.ERROR
    assert "envcheck_site_checks_gone:check" in by["plugin:site-missing"].message
    assert "ModuleNotFoundError" in by["plugin:site-missing"].message
    assert "is a int, not a check function" in by["plugin:site-number"].message


def test_plugin_checks_run_after_builtins_and_a_raising_plugin_is_an_error(plugin_dir):
    results = run_node_checks(healthy_a100x8(), expect(), node="gpu-node-1")
    plugin = [r for r in results if r.group == "plugins"]
    by = {r.check: r for r in plugin}
    assert by["site-hostname"].status is Status.PASS and by["site-hostname"].node == "gpu-node-1"
    assert by["site-raises"].status is Status.ERROR
    assert "check site-raises raised RuntimeError: plugin bug" in by["site-raises"].message
    assert by["plugin:site-missing"].node == "gpu-node-1"
    assert results.index(plugin[0]) > max(i for i, r in enumerate(results) if r.group == "node")


def test_without_plugins_installed_nothing_extra_runs():
    plugins, errors = load_plugins("envcheck.checks.no-such-group")
    assert plugins == [] and errors == []


def test_plugin_failure_reaches_the_cli_exit_code(plugin_dir, tmp_path):
    # a fresh interpreter discovers the entry point from PYTHONPATH like an installed package
    out = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--quiet"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(plugin_dir), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert out.returncode == 3, out.stdout + out.stderr  # ExitCode.ERROR: a check could not run
    assert "ERROR" in out.stdout


@pytest.mark.parametrize("group", ["console_scripts", "pytest11", "envcheck.checks"])
def test_entry_points_are_read_as_importlib_metadata_reads_them(group, plugin_dir):
    import importlib.metadata

    from envcheck.verify.plugins import entry_points

    want = sorted({(e.name, e.value) for e in importlib.metadata.entry_points().select(
        group=group)})
    assert want and sorted({(e.name, e.value) for e in entry_points(group)}) == want
