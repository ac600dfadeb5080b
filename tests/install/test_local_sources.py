"""envcheck install with file:// sources that are not what a package is: a FIFO nobody writes,
/dev/zero, a directory, a device node, a link to /proc/kmsg, a file outside the cache with a
wrong hash. Each is one line and exit 4 within --fetch-timeout, nothing left in the cache, and
no hash of a local file the lock names is printed."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

import pytest

from tests.support.deadlines import HANG
from tests.support.install_world import World, envcheck

DASK = "noarch/dask-2024.8.0-py_0.conda"


def _lock_with_dask_at(world: World, url: str, dest: Path) -> Path:
    """The world's lock with dask's archive fetched from ``url``."""
    text = world.lock.read_text()
    assert f"{world.url}/{DASK}" in text
    dest.write_text(text.replace(f"{world.url}/{DASK}", url))
    return dest


def _install(world: World, tmp_path: Path, source: Path) -> tuple[int, str, float]:
    lock = _lock_with_dask_at(world, source.as_uri(), tmp_path / "local.conda-lock.yml")
    started = time.monotonic()
    done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir",
                    tmp_path / "cache", "--fetch-timeout", "5", timeout=120)
    return done.returncode, done.stderr, time.monotonic() - started


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _named(tmp_path: Path) -> Path:
    """Where the hostile thing lives, under the archive's own file name."""
    folder = tmp_path / "src"
    folder.mkdir()
    return folder / DASK.rsplit("/", 1)[1]


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "directory", "device node", "proc-kmsg"])
def test_a_source_that_is_not_a_regular_file_is_refused_in_one_line(
    py39_world: World, tmp_path: Path, what: str
) -> None:
    source = _named(tmp_path)
    says = {"fifo": "is a FIFO, not", "dev-zero": "resolves to /dev/zero, under /dev",
            "directory": "is a directory, not", "device node": "is a character device, not",
            "proc-kmsg": "resolves to /proc/kmsg, under /proc"}[what]
    if what == "fifo":
        os.mkfifo(source)  # nobody ever writes it: opening it for reading would block
    elif what == "dev-zero":
        source.symlink_to("/dev/zero")  # endless: it would fill the cache's disk
    elif what == "directory":
        source.mkdir()
    elif what == "proc-kmsg":  # "regular", and as root a read of it waits for the kernel
        source.symlink_to("/proc/kmsg")
    else:
        if os.geteuid() != 0:
            pytest.skip("mknod of a character device needs root")
        os.mknod(source, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    code, stderr, took = _install(py39_world, tmp_path, source)
    line = _one_line(stderr)
    assert code == 4, stderr
    assert f"cannot fetch {source.as_uri()}: it {says}" in line
    assert took < 60
    assert not (tmp_path / "env").exists()
    assert not list((tmp_path / "cache").glob("archives/*/.part-*"))
    assert not list((tmp_path / "cache").glob("archives/*/dask-*"))


def test_a_local_file_with_a_wrong_hash_is_named_but_its_hash_never_printed(
    py39_world: World, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"root:$6$salt$hash:19000:0:99999:7:::\n")
    secret.chmod(0o600)
    sources = [secret]
    if os.geteuid() == 0 and Path("/etc/shadow").is_file():
        sources.append(Path("/etc/shadow"))
    for i, target in enumerate(sources):
        source = tmp_path / f"s{i}" / DASK.rsplit("/", 1)[1]
        source.parent.mkdir()
        source.symlink_to(target)
        code, stderr, _ = _install(py39_world, tmp_path, source)
        line = _one_line(stderr)
        assert code == 4, stderr
        assert "sha256 mismatch" in line and "the file does not match" in line
        data = target.read_bytes()
        for digest in (hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest()):
            assert digest not in stderr
        assert not (tmp_path / "env").exists()


@pytest.mark.parametrize("transport", ["file", "http"])
def test_a_source_larger_than_the_lock_states_is_refused_without_reading_it_all(
    tmp_path: Path, transport: str
) -> None:
    from tests.support.condapkg import serve
    from tests.support.small_channels import noarch_package, pixi_lock, records

    root = tmp_path / "channel"
    archive = noarch_package(root, "grown", {"share/grown.txt": (b"grown\n", 0o644, None)})
    size = archive.stat().st_size
    with serve(root) as url:
        recs = records(root, url if transport == "http" else None)  # pixi records state size
        assert [r.size for r in recs] == [size]
        lock = pixi_lock(tmp_path / "pixi.lock", url, recs)
        # 1 TiB, sparse: reading it to the end would outlast --fetch-timeout (then exit 7, not
        # 4) and fill the cache's disk
        os.truncate(archive, 1 << 40)
        started = time.monotonic()
        done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir",
                        tmp_path / "cache", "--fetch-timeout", "60", timeout=120)
    assert done.returncode == 4, done.stdout + done.stderr
    line = _one_line(done.stderr)
    assert f"more than the {size}" in line and "the lock states" in line, line
    assert time.monotonic() - started < HANG
    assert not (tmp_path / "env").exists()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()
                and p.stat().st_size > size]
