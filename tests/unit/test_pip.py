"""pip entries: resolved by uv against real PyPI for the solved Python and the target platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.lockfile.read import read_lock
from envcheck.record import replace
from envcheck.resolve.pip import conda_python_pins, python_version, target_platform
from envcheck.resolve.solve import SolvedPackage
from tests.support.channel import demo_channel, write_recipe


def solved(name: str, version: str, *depends: str) -> SolvedPackage:
    return SolvedPackage(name, version, "0", 0, "c", "linux-64", "u", None, None, depends, (), 0, 0)


def test_conda_python_packages_pin_the_pip_resolution() -> None:
    env = [
        solved("python", "3.9.18"),
        solved("pytorch", "1.12.1", "python >=3.9,<3.10.0a0"),
        solved("dask", "2022.7.1", "python >=3.8"),
        solved("libzlib", "1.2.13"),  # not a Python package
        solved("xgboost", "1.7.5dev.rapidsai23.04", "python"),  # not a PEP 440 version
    ]
    assert python_version(env) == "3.9"
    assert conda_python_pins(env) == {"torch": "1.12.1", "dask": "2022.7.1"}


def test_target_platform_follows_the_recipe_glibc() -> None:
    uv_platform, tags = target_platform("linux-64", {"glibc": "2.17"})
    assert uv_platform == "x86_64-manylinux_2_17"
    assert tags[0] == "manylinux_2_17_x86_64" and "manylinux_2_28_x86_64" not in tags
    uv_platform, tags = target_platform("linux-64", {"glibc": "2.28"})
    assert uv_platform == "x86_64-manylinux_2_28" and "manylinux_2_17_x86_64" in tags


@pytest.mark.slow
def test_pip_entry_lands_in_the_lock_with_pypi_url_and_sha256(tmp_path: Path) -> None:
    url = demo_channel(tmp_path / "ch")
    # six 1.16.0: pure Python, no dependencies: one small, fast resolution against real PyPI
    r = write_recipe(
        tmp_path, url, "[python=3.9]", "pip: [six==1.16.0]\n", system='{glibc: "2.17"}'
    )
    assert main(["build", str(r), "--out", str(tmp_path / "locks")]) == ExitCode.OK
    lock = read_lock(tmp_path / "locks" / "demo.conda-lock.yml")
    six = lock.for_platform("linux-64")[("pip", "six")]
    assert six.version == "1.16.0"
    assert six.url.startswith("https://files.pythonhosted.org/")
    assert six.url.endswith("/six-1.16.0-py2.py3-none-any.whl")
    # PyPI's published sha256 of that wheel
    assert six.sha256 == "8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254"
    explicit = (tmp_path / "locks" / "demo.linux-64.lock").read_text()
    assert f"# pip six @ {six.url}#sha256={six.sha256}" in explicit
    # the explicit file reads as the same packages, the wheel included
    from_explicit = read_lock(tmp_path / "locks" / "demo.linux-64.lock")
    assert from_explicit.for_platform("linux-64")[("pip", "six")] == replace(six, depends=())
    assert {k: (p.version, p.build) for k, p in from_explicit.for_platform("linux-64").items()} == {
        k: (p.version, p.build) for k, p in lock.for_platform("linux-64").items()
    }


def test_the_lint_reads_rapids_wheels_as_their_release_and_cuda_major(
    tmp_path: Path, capsys
) -> None:
    url = demo_channel(tmp_path / "ch")
    out = str(tmp_path / "locks")
    # no solve and no PyPI: the record refuses both before either starts
    r = write_recipe(tmp_path, url, "[python=3.9]", "pip: ['cudf-cu12==26.10.*', dask==2025.1.0]\n",
                     system='{cuda: "12.8", glibc: "2.28"}')  # fmt: skip
    assert main(["build", str(r), "--out", out]) == ExitCode.UNSOLVABLE
    assert "rapids.pin: recipe entry 'dask==2025.1.0'" in capsys.readouterr().err  # as written
    r = write_recipe(tmp_path, url, "[python=3.9]", "pip: ['cudf-cu11==26.10.*']\n",
                     name="cu11", system='{cuda: "12.8", glibc: "2.28"}')  # fmt: skip
    assert main(["build", str(r), "--out", out]) == ExitCode.UNSOLVABLE
    assert "pypi.org has its wheels for CUDA 12, 13.x only" in capsys.readouterr().err
