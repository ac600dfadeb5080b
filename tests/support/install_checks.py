"""What the install safety tests share: the install command line, readers of what an install left
in and beside a prefix, a small disk, and a served lock with one package of MANY files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.condapkg import serve
from tests.support.install_world import Installed
from tests.support.small_channels import (
    many_files,
    noarch_package,
    pixi_lock,
    records,
    world_records,
)


def install_cmd(lock: Path, prefix: Path, cache: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "envcheck",
        "install",
        str(lock),
        "--prefix",
        str(prefix),
        "--cache-dir",
        str(cache),
        *extra,
    ]


def one_line(stderr: str) -> str:
    lines = [x for x in stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def beside(prefix: Path) -> list[str]:
    """What envcheck left beside the prefix other than its lock file."""
    return sorted(
        p.name
        for p in prefix.parent.glob(f".{prefix.name}.envcheck-*")
        if not p.name.endswith("envcheck-lock")
    )


def read_stamp(prefix: Path) -> dict:
    return json.loads((prefix / "conda-meta" / "envcheck-install.json").read_text())


def sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_ino, p.lstat().st_size) for p in root.rglob("*")
    }


def meta_names(prefix: Path) -> set[str]:
    return {p.name for p in (prefix / "conda-meta").glob("*.json")} - {"envcheck-install.json"}


def record_names(recs: list) -> set[str]:
    return {f"{r.file_name.removesuffix('.conda')}.json" for r in recs}


@pytest.fixture(name="small_disk")
def small_disk_fixture(tmp_path: Path) -> Iterator[Path]:
    """A 20 MB tmpfs of its own (root only)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", mnt], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", mnt], check=False)


MANY = 20_000  # files in the package that takes long enough to link to be interrupted


@pytest.fixture(scope="module", name="many_lock")
def many_lock_fixture(
    py39_env: Installed, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The world's records plus one package of MANY files, served over loopback HTTP."""
    root = tmp_path_factory.mktemp("many-channel")
    noarch_package(root, "many", many_files(MANY))
    with serve(root) as url:
        recs = [*world_records(py39_env.world.lock), *records(root, url)]
        yield pixi_lock(tmp_path_factory.mktemp("many-lock") / "pixi.lock", url, recs)
