"""envcheck install when its cache or its downloads go wrong for real: an edited, touched or swapped
unpacked cache, a record linked elsewhere too, and servers that drip, cut or truncate their
answers, and a full cache disk."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.condapkg import serve
from tests.support.deadlines import HANG
from tests.support.install_checks import (
    beside,
    install_cmd,
    one_line,
    read_stamp,
    small_disk_fixture,  # noqa: F401  (the fixture)
)
from tests.support.install_world import Installed, envcheck
from tests.support.odd_servers import odd_server
from tests.support.small_channels import (
    noarch_package,
    pixi_lock,
    records,
)

pytestmark = pytest.mark.slow


def test_a_file_edited_in_the_unpacked_cache_is_refused(
    py39_env: Installed, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    first = envcheck(
        "install", py39_env.world.lock, "--prefix", tmp_path / "a", "--cache-dir", cache
    )
    assert first.returncode == 0, first.stderr
    (folder,) = [p for p in (cache / "pkgs").glob("dask-2024.8.0-*") if p.is_dir()]
    target = folder / "site-packages" / "dask" / "__init__.py"
    st = target.stat()
    target.write_text(target.read_text() + "\nimport os  # planted\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its mtime put back
    prefix = tmp_path / "b"
    done = envcheck("install", py39_env.world.lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 4, done.stdout + done.stderr
    line = one_line(done.stderr)
    assert "conda package dask 2024.8.0: site-packages/dask/__init__.py" in line
    assert "differs from the package" in line
    assert not prefix.exists() and beside(prefix) == []


def test_a_file_only_touched_in_the_unpacked_cache_still_installs(
    py39_env: Installed, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    assert (
        envcheck(
            "install", py39_env.world.lock, "--prefix", tmp_path / "a", "--cache-dir", cache
        ).returncode
        == 0
    )
    (folder,) = [p for p in (cache / "pkgs").glob("dask-2024.8.0-*") if p.is_dir()]
    os.utime(folder / "site-packages" / "dask" / "__init__.py")
    done = envcheck(
        "install", py39_env.world.lock, "--prefix", tmp_path / "b", "--cache-dir", cache
    )
    assert done.returncode == 0, done.stderr


def test_markers_renewed_after_an_install_match_the_next_walk_and_an_added_file_is_refused(
    py39_env: Installed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envcheck.provision import unpacked
    from envcheck.provision.install import pipeline
    from envcheck.provision.install.pipeline import read_plan

    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    plan = read_plan(py39_env.world.lock, "linux-64")
    pipeline.install(plan, tmp_path / "a", cache)
    pipeline.install(plan, tmp_path / "b", cache)  # hard links made: markers renewed
    for mark in (cache / "verified").glob("*.digest"):
        key, dig, _ = mark.read_text().split()
        folder = cache / "pkgs" / mark.name.removesuffix(".digest")
        assert unpacked.digest(key, unpacked.walk(folder)) == dig, folder.name
    compared: list[str] = []
    real = unpacked._compare
    monkeypatch.setattr(
        unpacked, "_compare", lambda a, *rest: (compared.append(a.name), real(a, *rest))[1]
    )
    pipeline.install(plan, tmp_path / "c", cache)
    assert compared == []  # every folder passed on its stat marker: nothing re-hashed
    (folder,) = [p for p in (cache / "pkgs").glob("dask-2024.8.0-*") if p.is_dir()]
    (folder / "site-packages" / "dask" / "planted.py").write_text("import os\n")
    with pytest.raises(unpacked.Tampered, match="planted.py was added to the unpacked cache"):
        pipeline.install(plan, tmp_path / "d", cache)
    assert not (tmp_path / "d").exists() and beside(tmp_path / "d") == []


def test_an_install_whose_cache_was_swapped_away_with_the_old_prefix_still_succeeds(
    py39_env: Installed, tmp_path: Path
) -> None:
    both = tmp_path / "both"  # --prefix and --cache-dir the same new directory
    done = envcheck("install", py39_env.world.lock, "--prefix", both, "--cache-dir", both)
    assert done.returncode == 0, done.stderr
    assert read_stamp(both)["lock_sha256"] and not (both / "verified").exists()


def test_a_record_with_other_links_is_replaced_not_written_through(tmp_path: Path) -> None:
    from envcheck.provision._link_child import _rewrite

    record = tmp_path / "pkg-1-0.json"
    record.write_text('{\n  "name": "pkg",\n  "url": "file:///cache/pkg-1-0.conda"\n}\n')
    other = tmp_path / "other.json"
    os.link(record, other)
    _rewrite(record, '"file:///cache/pkg-1-0.conda"', "https://example.org/pkg-1-0.conda")
    assert json.loads(record.read_text())["url"] == "https://example.org/pkg-1-0.conda"
    assert json.loads(other.read_text())["url"] == "file:///cache/pkg-1-0.conda"
    alone = tmp_path / "alone.json"
    alone.write_text('{"url": "file:///x.conda", "name": "alone"}')
    _rewrite(alone, '"file:///y.conda"', "https://example.org/x.conda")  # not found: parsed
    assert json.loads(alone.read_text()) == {"name": "alone", "url": "https://example.org/x.conda"}


def _served_lock(tmp_path: Path, url: str) -> tuple[Path, Path]:
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (os.urandom(3000), 0o644, None)})
    recs = records(root, url)
    return pixi_lock(tmp_path / "tiny.lock", url, recs), root


def test_a_server_dripping_a_byte_a_second_is_cut_at_the_fetch_timeout(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    with odd_server(root, "drip") as server:
        lock, _ = _served_lock(tmp_path, server.url)
        start = time.monotonic()
        done = envcheck(
            "install",
            lock,
            "--prefix",
            tmp_path / "env",
            "--cache-dir",
            tmp_path / "cache",
            "--fetch-timeout",
            "3",
        )
        took = time.monotonic() - start
    assert done.returncode == 7, done.stdout + done.stderr
    assert "no complete answer within --fetch-timeout 3 s" in one_line(done.stderr)
    assert took < HANG, took  # the option held, not the default (900 s)
    assert not (tmp_path / "env").exists()


def test_ctrl_c_during_a_dripping_download_takes_effect_at_once(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    cache = tmp_path / "cache"
    with odd_server(root, "drip") as server:
        lock, _ = _served_lock(tmp_path, server.url)
        proc = subprocess.Popen(
            install_cmd(lock, tmp_path / "env", cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not list(cache.glob("archives/*/.part-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # a byte or two in
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG)
        took = time.monotonic() - sent
    assert proc.returncode == 130, out + err
    assert took < HANG, took  # not the rest of the drip, nor the fetch timeout
    assert not list(cache.glob("archives/*/.part-*"))
    assert _empty_folders(cache) == []


def test_a_truncated_download_is_retried_and_then_installs(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    with odd_server(root, "truncate", truncate_times=1) as server:
        lock, _ = _served_lock(tmp_path, server.url)
        done = envcheck(
            "install", lock, "--prefix", tmp_path / "env", "--cache-dir", tmp_path / "cache"
        )
        asked = [p for p in server.requests if p.endswith(".conda")]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(asked) == 2, server.requests


def test_a_download_always_cut_short_is_unreachable_not_a_hash_mismatch(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    with odd_server(root, "truncate") as server:
        lock, _ = _served_lock(tmp_path, server.url)
        done = envcheck(
            "install", lock, "--prefix", tmp_path / "env", "--cache-dir", tmp_path / "cache"
        )
        asked = [p for p in server.requests if p.endswith(".conda")]
    assert done.returncode == 7, done.stdout + done.stderr
    line = one_line(done.stderr)
    assert "short of the announced length" in line and "(after 3 tries)" in line
    assert "mismatch" not in line
    assert len(asked) == 3
    assert _empty_folders(tmp_path / "cache") == []


def _empty_folders(cache: Path) -> list[str]:
    """Folders under the cache's archives/ with nothing in them."""
    return sorted(str(d) for d in (cache / "archives").glob("*") if not any(d.iterdir()))


def test_a_hash_mismatch_leaves_no_empty_folder_in_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (b"tiny\n", 0o644, None)})
    (rec,) = records(root)
    good = pixi_lock(tmp_path / "good.lock", root.as_uri(), [rec])
    lock = tmp_path / "bad.lock"
    lock.write_text(good.read_text().replace(rec.sha256.hex(), "0" * 64))
    cache = tmp_path / "cache"
    done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir", cache)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "sha256 mismatch" in one_line(done.stderr)
    assert (cache / "archives").is_dir() and _empty_folders(cache) == []


def test_a_full_cache_disk_is_disk_full_at_once(tmp_path: Path, small_disk: Path) -> None:
    root = tmp_path / "channel"
    noarch_package(root, "big", {"share/big.bin": (os.urandom(24 << 20), 0o644, None)})
    with serve(root) as url:
        lock = pixi_lock(tmp_path / "big.lock", url, records(root, url))
        start = time.monotonic()
        done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir", small_disk)
    assert done.returncode == 4, done.stdout + done.stderr
    line = one_line(done.stderr)
    assert "disk full writing the cache" in line and "tries" not in line
    assert time.monotonic() - start < 60
    assert not list(small_disk.glob("archives/*/.part-*"))
