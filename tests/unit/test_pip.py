"""pip entries: resolved by uv against real PyPI for the solved Python and the target platform."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import BadInput, ExitCode
from envcheck.lockfile.read import read_lock
from envcheck.record import replace
from envcheck.resolve.pip import conda_python_pins, python_version
from envcheck.resolve.pip_platform import UV_MANYLINUX, target_platform, wheels_note
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
    uv_platform, tags, admitted = target_platform("linux-64", {"glibc": "2.17"})
    assert uv_platform == "x86_64-manylinux_2_17" and admitted == tags
    assert tags[0] == "manylinux_2_17_x86_64" and "manylinux_2_28_x86_64" not in tags
    uv_platform, tags, _ = target_platform("linux-64", {"glibc": "2.28"})
    assert uv_platform == "x86_64-manylinux_2_28" and "manylinux_2_17_x86_64" in tags


def _minor(tag: str) -> int:
    m = re.match(r"manylinux_2_(\d+)_", tag)
    return int(m.group(1)) if m else 17  # manylinux2014/2010/1, linux_*: glibc <= 2.17


@pytest.mark.parametrize("minor", range(17, 41))
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_every_glibc_maps_to_a_uv_platform_that_admits_no_more_than_the_target(
    minor: int, arch: str
) -> None:
    platform = {"x86_64": "linux-64", "aarch64": "linux-aarch64"}[arch]
    uv_platform, tags, admitted = target_platform(platform, {"glibc": f"2.{minor}"})
    got = int(uv_platform.rsplit("_", 1)[1])
    assert uv_platform == f"{arch}-manylinux_2_{got}" and got in UV_MANYLINUX
    assert got <= minor  # admits no wheel the target cannot load
    assert not [m for m in UV_MANYLINUX if got < m <= minor]  # the nearest one: rounds down
    assert set(admitted) <= set(tags) and max(_minor(t) for t in admitted) == got
    assert max(_minor(t) for t in tags) == minor


def test_a_glibc_above_uv_s_newest_resolves_as_its_newest_and_below_2_17_is_refused() -> None:
    assert target_platform("linux-64", {"glibc": "2.41"})[0] == "x86_64-manylinux_2_40"
    with pytest.raises(BadInput, match="glibc >= 2.17"):
        target_platform("linux-64", {"glibc": "2.12"})


def test_the_build_says_which_glibc_the_chosen_wheels_were_checked_against() -> None:
    files = ["six-1.16.0-py2.py3-none-any.whl",
             "psutil-7.0.0-cp36-abi3-manylinux_2_12_x86_64.manylinux2010_x86_64.whl",
             "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"]
    note = wheels_note(files, "linux-64", {"glibc": "2.26"})
    assert note is not None and "3 pip files checked against glibc 2.26" in note
    assert "uv resolved for x86_64-manylinux_2_17" in note
    assert note.endswith("the newest needs glibc 2.17 (numpy-2.1.0-cp312-cp312-"
                         "manylinux_2_17_x86_64.manylinux2014_x86_64.whl)")
    assert wheels_note(files, "osx-arm64", {"glibc": "2.26"}) is None


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
    pip = "pip: ['dask-cudf-cu12==26.10.*', dask==2025.1.0]\n"  # dask-cudf requires dask
    r = write_recipe(tmp_path, url, "[python=3.9]", pip, system='{cuda: "12.8", glibc: "2.28"}')
    assert main(["build", str(r), "--out", out]) == ExitCode.UNSOLVABLE
    assert "rapids.pin: recipe entry 'dask==2025.1.0'" in capsys.readouterr().err  # as written
    r = write_recipe(tmp_path, url, "[python=3.9]", "pip: ['cudf-cu11==26.10.*']\n",
                     name="cu11", system='{cuda: "12.8", glibc: "2.28"}')  # fmt: skip
    assert main(["build", str(r), "--out", out]) == ExitCode.UNSOLVABLE
    assert "pypi.org has its wheels for CUDA 12, 13.x only" in capsys.readouterr().err



def test_a_chosen_wheel_that_needs_2_28_on_a_2_26_target_is_named_with_its_tag() -> None:
    from envcheck.resolve import el7

    wheels = [("six", "1.16.0", "six-1.16.0-py2.py3-none-any.whl"),
              ("xgboost", "3.4.1", "xgboost-3.4.1-py3-none-manylinux_2_28_x86_64.whl")]
    (bad,) = el7.check_solution("2.26", "linux-64", [], wheels, [], None)
    assert bad.line("2.26").startswith("xgboost 3.4.1 (pip) needs glibc 2.28 (wheel tag "
                                       "manylinux_2_28_x86_64)")
    assert el7.check_solution("2.28", "linux-64", [], wheels, [], None) == []
