"""Every glibc 2.17-2.40 resolves: uv takes only some manylinux_2_N values, envcheck maps a
target to the nearest at or below it and checks the chosen wheels against the exact glibc.
Real uv against real PyPI (metadata only); skips when PyPI cannot be reached."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.fetch import require_host

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.lockfile.read import read_lock
from envcheck.resolve import el7
from envcheck.resolve.pip_platform import UV_MANYLINUX
from envcheck.uv_runner import uv_binary
from tests.support.channel import demo_channel, write_recipe

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pypi() -> None:
    require_host("pypi.org")  # a real PyPI lock needs it


def test_the_manylinux_values_envcheck_knows_are_those_the_installed_uv_accepts() -> None:
    text = subprocess.run([uv_binary(), "pip", "compile", "--help"], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    said = {int(m) for m in re.findall(r"x86_64-manylinux_2_(\d+)", text)}
    assert said == set(UV_MANYLINUX)


@pytest.mark.parametrize("glibc", ["2.26", "2.27"])
def test_an_amazon_linux_2_or_ubuntu_18_04_pip_recipe_locks_with_wheels_it_loads(
    pypi: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, glibc: str
) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    # xgboost's newest wheels are manylinux_2_28 only: the resolution takes an older one
    r = write_recipe(tmp_path, demo_channel(tmp_path / "ch"), "[python=3.9]",
                     "pip: [six==1.16.0, xgboost]\n", system=f'{{glibc: "{glibc}"}}')  # fmt: skip
    report = tmp_path / "r.json"
    rc = main(["build", str(r), "--out", str(tmp_path / "locks"), "--json", str(report)])
    assert rc == ExitCode.OK
    lock = read_lock(tmp_path / "locks" / "demo.conda-lock.yml")
    pip = {n: p for (m, n), p in lock.for_platform("linux-64").items() if m == "pip"}
    assert {"six", "xgboost", "numpy"} <= set(pip)
    for p in pip.values():
        wheel = p.url.rsplit("/", 1)[-1]
        assert el7.fits(el7.wheel_needs(wheel), glibc), wheel
    assert "manylinux_2_28" not in pip["xgboost"].url
    notes = [r["message"] for r in json.loads(report.read_text())["results"]
             if r["check"] == "pip wheels demo"]  # fmt: skip
    assert len(notes) == 1 and f"checked against glibc {glibc}" in notes[0]
    assert "uv resolved for x86_64-manylinux_2_17" in notes[0]
