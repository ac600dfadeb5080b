"""envcheck install when things go wrong for real: two installs into one prefix at once, hostile
packages (absolute and '..' paths, symlinks out of the prefix, an interpreter elsewhere),
SIGINT/SIGTERM in the middle of linking 20,000 files and a full disk under the prefix. The cache
and downloads are in test_install_cache.py, the staging tree and linker child in
test_install_linker.py."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.provision.pip_part import Escapes, check_interpreter
from tests.support.condapkg import serve
from tests.support.install_checks import (
    MANY,
    beside,
    install_cmd,
    listing,
    many_lock_fixture,  # noqa: F401  (the fixture)
    meta_names,
    one_line,
    read_stamp,
    record_names,
    sha256,
    small_disk_fixture,  # noqa: F401  (the fixture)
)
from tests.support.install_world import Installed, World, envcheck
from tests.support.small_channels import (
    many_files,
    noarch_package,
    pixi_lock,
    records,
    world_records,
)

pytestmark = pytest.mark.slow


# --- one writer per prefix ---------------------------------------------------------------


@pytest.fixture(scope="module")
def two_locks(py39_env: Installed, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The world's lock and a pixi lock of the same records without distributed."""
    recs = world_records(py39_env.world.lock)
    small = pixi_lock(
        tmp_path_factory.mktemp("locks") / "pixi.lock",
        py39_env.world.url,
        [r for r in recs if r.name.normalized != "distributed"],
    )
    return py39_env.world.lock, small


def test_two_concurrent_installs_of_two_locks_leave_exactly_one_locks_env(
    py39_env: Installed, two_locks: tuple[Path, Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    prefix = tmp_path / "env"
    procs = [
        subprocess.Popen(
            install_cmd(lock, prefix, cache),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for lock in two_locks
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("another install: waiting" in err for _, err in outs) == 1, outs
    stamp = read_stamp(prefix)
    by_sha = {sha256(lock): lock for lock in two_locks}
    assert stamp["lock_sha256"] in by_sha
    import rattler

    env = rattler.LockFile.from_path(by_sha[stamp["lock_sha256"]]).default_environment()
    want = env.conda_repodata_records_for_platform(env.platforms()[0])
    assert meta_names(prefix) == record_names(want)
    has_distributed = (prefix / "lib/python3.9/site-packages/distributed").exists()
    assert has_distributed == any(r.name.normalized == "distributed" for r in want)
    assert beside(prefix) == []


def test_lock_timeout_0_fails_at_once_naming_the_holders_pid(
    py39_world: World, tmp_path: Path
) -> None:
    prefix, cache = tmp_path / "env", tmp_path / "cache"
    with serve(py39_world.channel_dir, chunk_delay_s=0.05) as slow:
        lock = tmp_path / "slow.conda-lock.yml"
        lock.write_text(py39_world.lock.read_text().replace(py39_world.url, slow))
        first = subprocess.Popen(
            install_cmd(lock, prefix, cache),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        holder = prefix.parent / ".env.envcheck-lock"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            holder.exists() and holder.read_text().strip() == str(first.pid)
        ):
            time.sleep(0.05)
        second = envcheck(
            "install", lock, "--prefix", prefix, "--cache-dir", cache, "--lock-timeout", "0"
        )
        out, err = first.communicate(timeout=600)
    assert second.returncode == 4, second.stdout + second.stderr
    line = one_line(second.stderr)
    assert f"prefix {prefix} is in use by pid {first.pid}" in line
    assert first.returncode == 0, out + err
    assert read_stamp(prefix)["lock_sha256"] == sha256(lock)


# --- hostile packages ---------------------------------------------------------------------


def _hostile(tmp_path: Path, case: str) -> tuple[Path, str, Path]:
    """A lock of one hostile package: (lock, the path it names, where it would have written)."""
    outside = tmp_path / f"outside-{case}.txt"
    ok = {"share/ok.txt": (b"ok\n", 0o644, None)}
    files = {
        "absolute": {str(outside): (b"pwned\n", 0o644, None), **ok},
        "dotdot": {"share/../../outside-dotdot.txt": (b"pwned\n", 0o644, None), **ok},
        "abs-link": {"bin/python": (None, 0o777, sys.executable), **ok},
        "rel-link": {"share/escape": (None, 0o777, "../../../outside-rel-link.txt"), **ok},
    }[case]
    named = next(iter(files))
    root = tmp_path / "channel"
    noarch_package(root, f"evil-{case}", files)
    return pixi_lock(tmp_path / "pixi.lock", root.as_uri(), records(root)), named, outside


@pytest.mark.parametrize("case", ["absolute", "dotdot", "abs-link", "rel-link"])
def test_hostile_package_metadata_is_refused_before_anything_is_linked(
    tmp_path: Path, case: str
) -> None:
    lock, named, outside = _hostile(tmp_path, case)
    prefix = tmp_path / "work" / "env"
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", tmp_path / "cache")
    assert done.returncode == 4, done.stdout + done.stderr
    line = one_line(done.stderr)
    assert f"package evil-{case} 1.0 is refused: {named!r}" in line
    assert not prefix.exists() and beside(prefix) == []
    assert not outside.exists()
    assert not [p for p in tmp_path.rglob("outside-*")], list(tmp_path.rglob("outside-*"))


def test_pip_part_refuses_an_interpreter_outside_the_prefix(tmp_path: Path) -> None:
    other = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", other], check=True)
    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(other / "bin" / "python")
    with pytest.raises(Escapes, match=r"/opt/env/bin/python resolves to /\S+, outside the prefix"):
        check_interpreter(env, Path("/opt/env"))
    # inside the prefix, but an interpreter whose site-packages is the other venv's
    (env / "bin" / "python").unlink()
    (env / "bin" / "python").write_text(f'#!/bin/sh\nexec "{other}/bin/python" "$@"\n')
    (env / "bin" / "python").chmod(0o755)
    with pytest.raises(Escapes, match=r"installs \w+ files into .*other-venv"):
        check_interpreter(env, Path("/opt/env"))


# --- interrupted and full: the prefix is the old env or the complete new one ---------------


def _interrupt_mid_link(lock: Path, prefix: Path, cache: Path, sig: int) -> tuple[int, str]:
    proc = subprocess.Popen(
        install_cmd(lock, prefix, cache),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    many = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        stages = list(prefix.parent.glob(f".{prefix.name}.envcheck-staging-*"))
        many = stages and stages[0] / "stage" / "share" / "many"
        if many and many.exists():
            break
        time.sleep(0.02)
    assert many and many.exists(), proc.communicate()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out + err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_link_leaves_no_new_prefix(
    py39_env: Installed, many_lock: Path, tmp_path: Path, sig: int, code: int
) -> None:
    cache = tmp_path / "cache"
    envcheck("install", many_lock, "--prefix", tmp_path / "warm", "--cache-dir", cache)
    prefix = tmp_path / "env"
    rc, output = _interrupt_mid_link(many_lock, prefix, cache, sig)
    assert rc == code, output
    assert not os.path.lexists(prefix) and beside(prefix) == []


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_link_keeps_the_old_env_whole_and_usable(
    py39_env: Installed, many_lock: Path, tmp_path: Path, sig: int, code: int
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    prefix = tmp_path / "env"
    done = envcheck("install", py39_env.world.lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stderr
    before, stamp = listing(prefix), read_stamp(prefix)
    rc, output = _interrupt_mid_link(many_lock, prefix, cache, sig)
    assert rc == code, output
    assert listing(prefix) == before and read_stamp(prefix) == stamp
    assert beside(prefix) == []
    run = subprocess.run(
        [prefix / "bin" / "python", "-c", "import dask, distributed"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    again = envcheck("install", many_lock, "--prefix", prefix, "--cache-dir", cache)
    assert again.returncode == 0, again.stderr  # the next install is not refused
    assert len(list((prefix / "share" / "many").rglob("*.txt"))) == MANY


def test_full_disk_while_linking_keeps_the_old_env_and_leaves_no_new_one(
    tmp_path: Path, small_disk: Path
) -> None:
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (b"tiny\n", 0o644, None)})
    noarch_package(root, "many", many_files(MANY))
    recs = {r.name.normalized: r for r in records(root)}
    tiny = pixi_lock(tmp_path / "tiny.lock", root.as_uri(), [recs["tiny"]])
    big = pixi_lock(tmp_path / "many.lock", root.as_uri(), [recs["many"]])
    cache, old, new = tmp_path / "cache", small_disk / "old", small_disk / "new"
    assert envcheck("install", tiny, "--prefix", old, "--cache-dir", cache).returncode == 0
    before, stamp = listing(old), read_stamp(old)
    free = shutil.disk_usage(small_disk).free
    for prefix in (old, new):
        done = envcheck("install", big, "--prefix", prefix, "--cache-dir", cache)
        assert done.returncode == 4, done.stdout + done.stderr
        assert "disk full" in one_line(done.stderr)
        assert beside(prefix) == []
    assert listing(old) == before and read_stamp(old) == stamp
    assert not new.exists()
    # nothing of the staging trees is left: only the new prefix's lock file (one page)
    assert free - shutil.disk_usage(small_disk).free <= 4096
    assert sorted(p.name for p in small_disk.iterdir()) == [
        ".new.envcheck-lock",
        ".old.envcheck-lock",
        "old",
    ]
