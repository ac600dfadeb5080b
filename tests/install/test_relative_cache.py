"""A relative --cache-dir or ENVCHECK_CACHE is relative to the working directory, as any other
path on the command line: the install works and the cache is made there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.install_world import World, envcheck


@pytest.mark.parametrize("how", ["--cache-dir", "ENVCHECK_CACHE"])
def test_a_relative_cache_dir_is_taken_against_the_working_directory(
    py39_world: World, tmp_path: Path, how: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    prefix = tmp_path / "env"
    args: list[object] = ["install", py39_world.lock, "--prefix", prefix]
    env = {k: v for k, v in os.environ.items() if k != "ENVCHECK_CACHE"}
    if how == "--cache-dir":
        args += ["--cache-dir", "rel/cache"]
    else:
        env["ENVCHECK_CACHE"] = "rel/cache"
    done = envcheck(*args, cwd=work, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (prefix / "conda-meta" / "envcheck-install.json").is_file()
    assert list((work / "rel" / "cache" / "archives").glob("*/dask-2024.8.0-py_0.conda"))
