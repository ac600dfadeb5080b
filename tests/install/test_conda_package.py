"""The conda package of envcheck itself: conda/recipe.yaml built from this checkout's sdist
with py-rattler-build against a local channel (CPython 3.9 from this machine's pyenv, pip and
setuptools from their PyPI wheels: conda-forge is never asked), indexed with py-rattler, locked
and installed by `envcheck install`; the installed `envcheck` runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.distribution import DISTRIBUTION
from tests.support.condapkg import index_channel, python_package, serve, wheel_package
from tests.support.install_world import envcheck, pyenv_python
from tests.support.small_channels import pixi_lock, records

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "conda" / "recipe.yaml"
# the build's host env: pip installs envcheck's source with setuptools (pinned, hash-checked)
HOST_WHEELS = (
    "pip==24.2 --hash=sha256:2cd581cf58ab7fcfca4ce8efa6dcacd0de5bf8d0a3eb9ec927e07405f4d9e2a2",
    "setuptools==75.3.0 "
    "--hash=sha256:f2504966861356aa38616760c0f66568e535562374995367b4e69c7143cf6bcd",
)

rattler_build = pytest.importorskip("rattler_build", reason="needs py-rattler-build")
pytestmark = pytest.mark.slow


def _local_channel(root: Path, wheels: Path) -> Path:
    python = pyenv_python("3.9")
    assert python is not None, "tests/conftest.py checks pyenv's 3.9 for the install kind"
    wheels.mkdir(parents=True, exist_ok=True)
    reqs = wheels / "requirements.txt"
    reqs.write_text("\n".join(HOST_WHEELS) + "\n")
    subprocess.run(["python", "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary", ":all:", "--require-hashes", "-r", str(reqs),
                    "-d", str(wheels)], check=True, timeout=300)  # fmt: skip
    python_package(python, root)
    for wheel in sorted(wheels.glob("*.whl")):
        wheel_package(wheel, root, "3.9")
    index_channel(root)
    return root


def _sdist(out: Path) -> Path:
    """The sdist of this checkout, as `python -m build --sdist` makes it (setuptools' backend,
    MANIFEST.in)."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                    "build_meta.build_sdist(sys.argv[1])", str(out)], cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    (sdist,) = out.glob("cluster_envcheck-*.tar.gz")
    return sdist


def _build(channel: Path, out: Path) -> Path:
    """conda/recipe.yaml built against ``channel`` alone; the package file."""
    recipe = rattler_build.Stage0Recipe.from_file(RECIPE)
    tools = rattler_build.ToolConfiguration(test_strategy="skip", use_sharded=False)
    recipe.run_build(tool_config=tools, output_dir=out, channels=[channel.resolve().as_uri()],
                     no_build_id=True)
    (built,) = (out / "noarch").glob(f"{DISTRIBUTION}-*.conda")
    return built


def test_the_recipe_version_is_the_package_version() -> None:
    from envcheck import __version__

    found = re.search(r'^  version: "([^"]+)"', RECIPE.read_text(), re.MULTILINE)
    assert found is not None and found.group(1) == __version__


def test_the_recipe_says_what_a_feedstock_needs() -> None:
    """python_min declared (pyproject's requires-python), `pip check` run, no link to a PyPI
    page that does not exist yet, the extras named with their conda-forge packages."""
    text = RECIPE.read_text()
    assert 'python_min: "3.8"' in text and "python >=${{ python_min }}" in text
    assert "pip_check: true" in text and "pip_check: false" not in text
    assert "pypi.org/project" not in text
    for extra in ("build, install:", "gpu:", "slurm:"):
        assert f"#   {extra}" in text
    assert "py-rattler 0.28.*" in text and "dask-jobqueue" in text


def test_envcheck_conda_package_builds_from_the_sdist_and_installs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = _local_channel(tmp_path / "channel", tmp_path / "wheels")
    monkeypatch.setenv("ENVCHECK_SDIST", str(_sdist(tmp_path / "dist")))
    monkeypatch.chdir(tmp_path)  # not the checkout: the sdist alone is the source
    built = _build(channel, tmp_path / "out")
    assert built.name.startswith(f"{DISTRIBUTION}-0.1.0-")
    shutil.copy2(built, channel / "noarch" / built.name)
    with serve(channel) as url:
        wanted = [r for r in records(channel, url) if r.name.normalized in ("python", DISTRIBUTION)]
        assert sorted(r.name.normalized for r in wanted) == [DISTRIBUTION, "python"]
        lock = pixi_lock(tmp_path / "pixi.lock", url, wanted)
        prefix = tmp_path / "env"
        done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", tmp_path / "cache")
        assert done.returncode == 0, done.stdout + done.stderr
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the env's envcheck
    helped = subprocess.run([prefix / "bin" / "envcheck", "--help"], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path, env=alone)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: envcheck")
    where = subprocess.run([prefix / "bin" / "python", "-c", "import envcheck; "
                            "print(envcheck.__file__)"], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path, env=alone, check=True).stdout
    assert where.startswith(str(prefix / "lib" / "python3.9" / "site-packages" / "envcheck"))
