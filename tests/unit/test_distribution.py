"""The install hint fits how envcheck was installed: a checkout, pip, uv pip, pipx, uv tool;
each told apart by the install's own metadata (direct_url.json, INSTALLER, the prefix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck import distribution
from envcheck.distribution import DISTRIBUTION, extra_hint, install_kind


def _dist_info(tmp: Path, installer: str = "pip", editable: bool | None = None) -> Path:
    info = tmp / "cluster_envcheck-0.1.0.dist-info"
    info.mkdir()
    (info / "INSTALLER").write_text(installer + "\n")
    if editable is not None:
        url = {"url": "file:///src/envcheck", "dir_info": {"editable": editable}}
        (info / "direct_url.json").write_text(json.dumps(url))
    return info


@pytest.fixture
def installed(monkeypatch):
    """As an installed envcheck sees itself: not imported from a source tree."""
    monkeypatch.setattr(distribution, "_checkout", lambda: None)
    monkeypatch.delenv("UV_TOOL_DIR", raising=False)


@pytest.mark.parametrize("prefix, installer, kind", [
    ("/home/u/.local/share/pipx/venvs/cluster-envcheck", "pip", "pipx"),
    ("/home/u/.local/share/uv/tools/cluster-envcheck", "uv", "uv-tool"),
    ("/opt/venv", "uv", "uv"),
    ("/opt/conda/envs/rapids", "pip", "pip"),
])
def test_the_install_is_told_by_its_prefix_and_installer(tmp_path, installed, prefix, installer,
                                                          kind):
    assert install_kind(prefix, _dist_info(tmp_path, installer)) == kind


def test_an_editable_install_is_a_checkout(tmp_path, installed):
    assert install_kind("/opt/venv", _dist_info(tmp_path, editable=True)) == "checkout"
    other = tmp_path / "other"
    other.mkdir()
    assert install_kind("/opt/venv", _dist_info(other, editable=False)) == "pip"


def test_uv_tool_dir_is_honoured(tmp_path, installed, monkeypatch):
    monkeypatch.setenv("UV_TOOL_DIR", "/srv/tools")
    assert install_kind("/srv/tools/cluster-envcheck", _dist_info(tmp_path)) == "uv-tool"


def test_this_checkout_is_a_checkout():
    assert install_kind() == "checkout"  # the tests import envcheck from the source tree



@pytest.mark.parametrize("kind, hint", [
    ("checkout", "pip install -e '.[build]' in the checkout"),
    ("pip", f"pip install '{DISTRIBUTION}[build]'"),
    ("uv", f"uv pip install '{DISTRIBUTION}[build]'"),
    ("pipx", f"pipx install '{DISTRIBUTION}[build]' --force"),
    ("uv-tool", f"uv tool install '{DISTRIBUTION}[build]'"),
])
def test_each_install_gets_its_own_command(kind, hint):
    assert extra_hint("build", kind) == hint


def test_the_hint_never_names_the_other_projects_distribution():
    for kind in ("pip", "uv", "pipx", "uv-tool"):
        assert "'envcheck[" not in extra_hint("install", kind)
