"""Session fixtures for install and image tests: a channel of real conda packages served over
loopback HTTP, a lock `envcheck build` wrote against it, and one env `envcheck install` made.

The channel holds CPython 3.9 packaged from this machine's pyenv install and noarch / per-Python
packages repackaged from the PyPI wheels in tests/data/wheels-py39.txt (dask and distributed
2024.8.0, the last releases for Python 3.9: the RAPIDS 22.08 shape). Built once per session.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.channel import write_recipe
from tests.support.condapkg import index_channel, python_package, serve, wheel_package

DATA = Path(__file__).parents[1] / "data"
PIP_ENTRY = "six==1.17.0"  # one pip entry: the lock's pip part is installed with its hash


def pyenv_python(minor: str) -> Path | None:
    """The newest pyenv install of ``minor`` (e.g. "3.9"), if this machine has one."""
    root = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
    found = sorted(
        (p for p in root.glob(f"{minor}.*") if p.name.replace(".", "").isdigit()),
        key=lambda p: tuple(int(x) for x in p.name.split(".")),
    )
    return found[-1] if found else None


def envcheck(*args: object, timeout: float = 300, **kw) -> subprocess.CompletedProcess:  # noqa: ANN003
    """Run the envcheck CLI in a real process (non-TTY: no progress bars)."""
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kw,
    )


def _fetch_wheel(line: str, dest: Path) -> Path:
    url, sha = line.split()
    path = dest / url.rsplit("/", 1)[1]
    data = urllib.request.urlopen(url, timeout=60).read()  # noqa: S310
    if hashlib.sha256(data).hexdigest() != sha:
        raise RuntimeError(f"{url}: sha256 differs from tests/data/wheels-py39.txt")
    path.write_bytes(data)
    return path


def build_py39_channel(python: Path, root: Path, wheels: Path) -> Path:
    """Fetch the wheels (hash-checked), package them and ``python``, index ``root``."""
    lines = [x for x in (DATA / "wheels-py39.txt").read_text().splitlines() if x[:1] != "#"]
    with ThreadPoolExecutor(8) as pool:
        wheel_paths = list(pool.map(lambda x: _fetch_wheel(x, wheels), lines))
        built = pool.submit(python_package, python, root)
        for w in wheel_paths:
            wheel_package(w, root, "3.9")
        built.result()
    index_channel(root)
    return root


@dataclass(frozen=True)
class World:
    channel_dir: Path
    url: str  # http://127.0.0.1:PORT
    lock: Path  # conda-lock file envcheck build wrote
    python_version: str


@pytest.fixture(scope="session")
def py39_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    python = pyenv_python("3.9")
    assert python is not None, "tests/conftest.py checks pyenv's 3.9 for the install kind"
    root = build_py39_channel(
        python, tmp_path_factory.mktemp("channel39"), tmp_path_factory.mktemp("wheels39")
    )
    with serve(root) as url:
        recipe = write_recipe(
            tmp_path_factory.mktemp("recipe39"),
            url,
            "['python 3.9.*', 'dask', 'distributed']",
            f"pip: ['{PIP_ENTRY}']\n",
            name="py39-dask",
            system='{glibc: "2.17"}',
        )
        out = tmp_path_factory.mktemp("locks39")
        done = envcheck("build", recipe, "--out", out)
        assert done.returncode == 0, done.stdout + done.stderr
        yield World(root, url, out / "py39-dask.conda-lock.yml", python.name)


@dataclass(frozen=True)
class Installed:
    world: World
    prefix: Path
    cache: Path
    first: subprocess.CompletedProcess


@pytest.fixture(scope="session")
def py39_env(py39_world: World, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The lock installed once into a fresh prefix (a path longer than pyenv's own)."""
    base = tmp_path_factory.mktemp("env39")
    prefix = base / "a-prefix-path-longer-than-the-one-python-was-built-for"
    cache = base / "cache"
    done = envcheck("install", py39_world.lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    return Installed(py39_world, prefix, cache, done)
