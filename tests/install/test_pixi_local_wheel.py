"""A pixi.lock whose PyPI package is a local wheel (``pypi: file:///...whl``, as pixi writes a
path dependency it built) installs into a fresh prefix from a fresh cache."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from tests.support.install_world import Installed, envcheck
from tests.support.small_channels import world_records
from tests.support.wheels import six_wheel


def _wheel(dest: Path) -> Path:
    """A small pure-Python wheel, six 1.17.0 as the world's lock pins it."""
    return six_wheel(dest, {"six.py": b"__version__ = '1.17.0'\n"})


def _pixi_lock(env: Installed, wheel: Path, path: Path) -> Path:
    import rattler

    lock = rattler.LockFile([rattler.LockPlatform("linux-64")])
    lock.set_channels("default", [rattler.LockChannel(env.world.url)])
    for r in world_records(env.world.lock):
        lock.add_conda_package("default", lock.platforms()[0], r)
    lock.add_pypi_package("default", lock.platforms()[0], "six", "1.17.0", wheel.as_uri())
    lock.to_path(path)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    text = path.read_text()
    entry = f"- pypi: {wheel.as_uri()}\n  name: six\n  version: 1.17.0\n"
    assert entry in text, text[-500:]
    path.write_text(text.replace(entry, f"{entry}  sha256: {sha}\n  requires_python: '>=3.8'\n"))
    return path


def test_a_pixi_lock_naming_a_local_wheel_installs_on_a_fresh_cache(
    py39_env: Installed, tmp_path: Path
) -> None:
    wheel = _wheel(tmp_path)
    lock = _pixi_lock(py39_env, wheel, tmp_path / "pixi.lock")
    from envcheck.lockfile.read import read_lock

    for records in (False, True):  # envcheck's reader and py-rattler's name it alike
        pip = [p.url for p in read_lock(lock, "linux-64", records=records).packages
               if p.manager == "pip"]
        assert pip == [wheel.as_uri()], (records, pip)
    cache = tmp_path / "cache"  # fresh: the conda archives come from the world's channel
    shutil.rmtree(cache, ignore_errors=True)
    prefix = tmp_path / "env"
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "+ 1 pip" in done.stdout, done.stdout
    found = list(prefix.glob("lib/python3.9/site-packages/six-1.17.0.dist-info/METADATA"))
    assert found and (found[0].parents[1] / "six.py").read_bytes() == b"__version__ = '1.17.0'\n"
