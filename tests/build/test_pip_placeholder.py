"""A placeholder sdist on pypi.org (cuml-cu12 25.8.0: no wheel; its build downloads the real
wheel from https://pypi.nvidia.com) is named with the index to add, exit 5. Real uv against
real PyPI; skips when PyPI cannot be reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fetch import require_host

from envcheck.cli import main
from envcheck.errors import ExitCode
from tests.support.channel import pkg, write_channel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pypi() -> None:
    require_host("pypi.org")  # a real PyPI lock needs it


def test_cuml_cu12_25_8_from_pypi_org_is_named_a_placeholder_with_the_index_to_add(
    pypi: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    channel = write_channel(tmp_path / "ch", [pkg("python", "3.12.7", ["__glibc >=2.17"],
                                                  build="h0_cpython")])  # fmt: skip
    recipe = tmp_path / "cuml.yaml"
    recipe.write_text(f"name: cuml\nchannels: ['{channel}']\nplatforms: [linux-64]\n"
                      "system: {glibc: '2.28'}\ndependencies: [python=3.12]\n"
                      "pip: [cuml-cu12==25.8.0]\n")  # fmt: skip
    rc = main(["build", str(recipe), "--out", str(tmp_path / "l"), "--no-lint"])
    err = capsys.readouterr().err
    assert rc == ExitCode.UNSOLVABLE, err
    assert ("pip: cuml-cu12 25.8.0 on https://pypi.org/simple is a placeholder sdist (no wheel; "
            "building it downloads the real wheel from https://pypi.nvidia.com)") in err
    assert "pip_extra_index: [https://pypi.nvidia.com]" in err
    assert not list(tmp_path.glob("l/*.conda-lock.yml"))
