"""envcheck install when things go wrong for real: two installs into one prefix at once, hostile
packages (absolute and '..' paths, symlinks out of the prefix, an interpreter elsewhere),
SIGINT/SIGTERM in the middle of linking 20,000 files, a full disk under the prefix, an edited
unpacked cache, and servers that drip or cut their answers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck.errors import EnvcheckError
from envcheck.provision.pip_part import Escapes, check_interpreter
from tests.support.condapkg import serve
from tests.support.install_world import Installed, World, envcheck
from tests.support.odd_servers import odd_server
from tests.support.small_channels import (
    many_files,
    noarch_package,
    pixi_lock,
    records,
    world_records,
)

pytestmark = pytest.mark.slow

MANY = 20_000  # files in the package that takes long enough to link to be interrupted


def _cmd(lock: Path, prefix: Path, cache: Path, *extra: str) -> list[str]:
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


def _one_line(stderr: str) -> str:
    lines = [x for x in stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _beside(prefix: Path) -> list[str]:
    """What envcheck left beside the prefix other than its lock file."""
    return sorted(
        p.name
        for p in prefix.parent.glob(f".{prefix.name}.envcheck-*")
        if not p.name.endswith("envcheck-lock")
    )


def _stamp(prefix: Path) -> dict:
    return json.loads((prefix / "conda-meta" / "envcheck-install.json").read_text())


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_ino, p.lstat().st_size) for p in root.rglob("*")
    }


def _meta_names(prefix: Path) -> set[str]:
    return {p.name for p in (prefix / "conda-meta").glob("*.json")} - {"envcheck-install.json"}


def _record_names(recs: list) -> set[str]:
    return {f"{r.file_name.removesuffix('.conda')}.json" for r in recs}


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
            _cmd(lock, prefix, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for lock in two_locks
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("another install: waiting" in err for _, err in outs) == 1, outs
    stamp = _stamp(prefix)
    by_sha = {_sha256(lock): lock for lock in two_locks}
    assert stamp["lock_sha256"] in by_sha
    import rattler

    env = rattler.LockFile.from_path(by_sha[stamp["lock_sha256"]]).default_environment()
    want = env.conda_repodata_records_for_platform(env.platforms()[0])
    assert _meta_names(prefix) == _record_names(want)
    has_distributed = (prefix / "lib/python3.9/site-packages/distributed").exists()
    assert has_distributed == any(r.name.normalized == "distributed" for r in want)
    assert _beside(prefix) == []


def test_lock_timeout_0_fails_at_once_naming_the_holders_pid(
    py39_world: World, tmp_path: Path
) -> None:
    prefix, cache = tmp_path / "env", tmp_path / "cache"
    with serve(py39_world.channel_dir, chunk_delay_s=0.05) as slow:
        lock = tmp_path / "slow.conda-lock.yml"
        lock.write_text(py39_world.lock.read_text().replace(py39_world.url, slow))
        first = subprocess.Popen(
            _cmd(lock, prefix, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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
    line = _one_line(second.stderr)
    assert f"prefix {prefix} is in use by pid {first.pid}" in line
    assert first.returncode == 0, out + err
    assert _stamp(prefix)["lock_sha256"] == _sha256(lock)


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
    line = _one_line(done.stderr)
    assert f"package evil-{case} 1.0 is refused: {named!r}" in line
    assert not prefix.exists() and _beside(prefix) == []
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


@pytest.fixture(scope="module")
def many_lock(py39_env: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The world's records plus one package of MANY files, served over loopback HTTP."""
    root = tmp_path_factory.mktemp("many-channel")
    noarch_package(root, "many", many_files(MANY))
    with serve(root) as url:
        recs = [*world_records(py39_env.world.lock), *records(root, url)]
        yield pixi_lock(tmp_path_factory.mktemp("many-lock") / "pixi.lock", url, recs)


def _interrupt_mid_link(lock: Path, prefix: Path, cache: Path, sig: int) -> tuple[int, str]:
    proc = subprocess.Popen(
        _cmd(lock, prefix, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    many = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        stages = list(prefix.parent.glob(f".{prefix.name}.envcheck-staging-*"))
        many = stages and stages[0] / "share" / "many"
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
    assert not os.path.lexists(prefix) and _beside(prefix) == []


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_link_keeps_the_old_env_whole_and_usable(
    py39_env: Installed, many_lock: Path, tmp_path: Path, sig: int, code: int
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    prefix = tmp_path / "env"
    done = envcheck("install", py39_env.world.lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stderr
    before, stamp = _listing(prefix), _stamp(prefix)
    rc, output = _interrupt_mid_link(many_lock, prefix, cache, sig)
    assert rc == code, output
    assert _listing(prefix) == before and _stamp(prefix) == stamp
    assert _beside(prefix) == []
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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
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
    before, stamp = _listing(old), _stamp(old)
    free = shutil.disk_usage(small_disk).free
    for prefix in (old, new):
        done = envcheck("install", big, "--prefix", prefix, "--cache-dir", cache)
        assert done.returncode == 4, done.stdout + done.stderr
        assert "disk full" in _one_line(done.stderr)
        assert _beside(prefix) == []
    assert _listing(old) == before and _stamp(old) == stamp
    assert not new.exists()
    # nothing of the staging trees is left: only the new prefix's lock file (one page)
    assert free - shutil.disk_usage(small_disk).free <= 4096
    assert sorted(p.name for p in small_disk.iterdir()) == [
        ".new.envcheck-lock",
        ".old.envcheck-lock",
        "old",
    ]


# --- the unpacked cache is what is linked ---------------------------------------------------


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
    line = _one_line(done.stderr)
    assert "conda package dask 2024.8.0: site-packages/dask/__init__.py" in line
    assert "differs from the package" in line
    assert not prefix.exists() and _beside(prefix) == []


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
    from envcheck.provision import install as install_module
    from envcheck.provision import unpacked
    from envcheck.provision.plan import read_plan

    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    plan = read_plan(py39_env.world.lock, "linux-64")
    install_module.install(plan, tmp_path / "a", cache)
    install_module.install(plan, tmp_path / "b", cache)  # hard links made: markers renewed
    for mark in (cache / "verified").glob("*.digest"):
        key, dig, _ = mark.read_text().split()
        folder = cache / "pkgs" / mark.name.removesuffix(".digest")
        assert unpacked.digest(key, unpacked.walk(folder)) == dig, folder.name
    compared: list[str] = []
    real = unpacked._compare
    monkeypatch.setattr(
        unpacked, "_compare", lambda a, *rest: (compared.append(a.name), real(a, *rest))[1]
    )
    install_module.install(plan, tmp_path / "c", cache)
    assert compared == []  # every folder passed on its stat marker: nothing re-hashed
    (folder,) = [p for p in (cache / "pkgs").glob("dask-2024.8.0-*") if p.is_dir()]
    (folder / "site-packages" / "dask" / "planted.py").write_text("import os\n")
    with pytest.raises(unpacked.Tampered, match="planted.py was added to the unpacked cache"):
        install_module.install(plan, tmp_path / "d", cache)
    assert not (tmp_path / "d").exists() and _beside(tmp_path / "d") == []


def test_an_install_whose_cache_was_swapped_away_with_the_old_prefix_still_succeeds(
    py39_env: Installed, tmp_path: Path
) -> None:
    both = tmp_path / "both"  # --prefix and --cache-dir the same new directory
    done = envcheck("install", py39_env.world.lock, "--prefix", both, "--cache-dir", both)
    assert done.returncode == 0, done.stderr
    assert _stamp(both)["lock_sha256"] and not (both / "verified").exists()


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


# --- downloads --------------------------------------------------------------------------------


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
    assert "no complete answer within --fetch-timeout 3 s" in _one_line(done.stderr)
    assert took < 20, took
    assert not (tmp_path / "env").exists()


def test_ctrl_c_during_a_dripping_download_takes_effect_within_a_second(tmp_path: Path) -> None:
    root = tmp_path / "channel"
    cache = tmp_path / "cache"
    with odd_server(root, "drip") as server:
        lock, _ = _served_lock(tmp_path, server.url)
        proc = subprocess.Popen(
            _cmd(lock, tmp_path / "env", cache),
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
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    assert proc.returncode == 130, out + err
    assert took < 1.0, took
    assert not list(cache.glob("archives/*/.part-*"))


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
    line = _one_line(done.stderr)
    assert "short of the announced length" in line and "(after 3 tries)" in line
    assert "mismatch" not in line
    assert len(asked) == 3


def test_a_full_cache_disk_is_disk_full_at_once(tmp_path: Path, small_disk: Path) -> None:
    root = tmp_path / "channel"
    noarch_package(root, "big", {"share/big.bin": (os.urandom(24 << 20), 0o644, None)})
    with serve(root) as url:
        lock = pixi_lock(tmp_path / "big.lock", url, records(root, url))
        start = time.monotonic()
        done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir", small_disk)
    assert done.returncode == 4, done.stdout + done.stderr
    line = _one_line(done.stderr)
    assert "disk full writing the cache" in line and "tries" not in line
    assert time.monotonic() - start < 60
    assert not list(small_disk.glob("archives/*/.part-*"))


# --- built beside, used in place: nothing names the staging tree ----------------------------


def _script_wheel(dest: Path) -> Path:
    """A wheel standing in for the lock's six 1.17.0 entry, with a console script."""
    import base64
    import hashlib
    import zipfile

    dist = "six-1.17.0.dist-info"
    files = {
        "six_hello.py": b"import sys\n\ndef main():\n    print(sys.prefix)\n",
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{dist}/entry_points.txt": b"[console_scripts]\nsix-hello = six_hello:main\n",
    }

    def row(name: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{name},sha256={digest},{len(data)}"

    record = "\n".join([*(row(n, d) for n, d in files.items()), f"{dist}/RECORD,,"]) + "\n"
    path = dest / "six-1.17.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{dist}/RECORD", record)
    return path


def test_the_env_names_its_final_path_not_the_staging_tree(
    py39_env: Installed, tmp_path: Path
) -> None:
    import re

    text = py39_env.world.lock.read_text()
    wheel = _script_wheel(tmp_path)
    url = re.search(r"url: (\S+/six-1\.17\.0-\S+\.whl)", text).group(1)
    sha = re.search(rf"url: {re.escape(url)}\s+hash:\s+sha256: (\w+)", text).group(1)
    lock = tmp_path / "script.conda-lock.yml"
    lock.write_text(text.replace(url, wheel.as_uri()).replace(sha, _sha256(wheel)))
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    prefix = tmp_path / "env"
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    script = prefix / "bin" / "six-hello"
    assert script.read_bytes().startswith(f"#!{prefix}/bin/python".encode())
    run = subprocess.run([script], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == str(prefix)
    (record,) = prefix.glob("lib/python3.9/site-packages/six-1.17.0.dist-info/RECORD")
    rows = {r.split(",")[0]: r for r in record.read_text().splitlines()}
    (row,) = [r for k, r in rows.items() if k.endswith("bin/six-hello")]
    import base64
    import hashlib

    data = script.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert row.endswith(f"sha256={digest},{len(data)}")
    leaks = [
        str(p)
        for p in prefix.rglob("*")
        if p.is_file() and not p.is_symlink() and b".envcheck-staging-" in p.read_bytes()
    ]
    assert leaks == []
    sysconfig = subprocess.run(
        [
            prefix / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('prefix'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert sysconfig.stdout.strip() == str(prefix)


def _tiny_lock(tmp_path: Path) -> Path:
    """A pixi lock of one noarch package that holds share/tiny/a.txt."""
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (b"tiny\n", 0o644, None)})
    return pixi_lock(tmp_path / "tiny.lock", root.as_uri(), records(root))


def test_the_next_install_undoes_what_a_killed_swap_left(tmp_path: Path) -> None:
    lock = _tiny_lock(tmp_path)
    prefix, cache = tmp_path / "env", tmp_path / "cache"
    assert envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache).returncode == 0
    before = _listing(prefix)
    # what SIGKILL between the fallback swap's two renames leaves: no prefix, the old env
    # aside, a complete or partial staging tree
    prefix.rename(tmp_path / ".env.envcheck-old-99999")
    (tmp_path / ".env.envcheck-staging-99998" / "share").mkdir(parents=True)
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restored" in done.stderr and "nothing to do" in done.stdout
    assert _listing(prefix) == before
    assert _beside(prefix) == []


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


def test_a_linker_that_aborts_mid_link_is_reported_and_cleaned_up(
    py39_env: Installed, many_lock: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    envcheck("install", many_lock, "--prefix", tmp_path / "warm", "--cache-dir", cache)
    prefix = tmp_path / "env"
    proc = subprocess.Popen(
        _cmd(many_lock, prefix, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    many = None
    while time.monotonic() < deadline and proc.poll() is None:
        stages = list(prefix.parent.glob(f".{prefix.name}.envcheck-staging-*"))
        many = stages and stages[0] / "share" / "many"
        if many and many.exists():
            break
        time.sleep(0.02)
    assert many and many.exists(), proc.communicate()
    (child,) = _children(proc.pid)  # the linker, as a panic in py-rattler would end it
    os.kill(child, signal.SIGABRT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, out + err
    assert "the linker process died (SIGABRT)" in _one_line(err)
    assert not os.path.lexists(prefix) and _beside(prefix) == []


def test_a_process_with_threads_links_through_a_started_child(tmp_path: Path) -> None:
    # the API in a process that has other threads (a notebook's, py-rattler's runtime):
    # forking it is unsafe, so the linker child is a fresh interpreter
    lock = _tiny_lock(tmp_path)
    code = (
        "import sys, threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "from envcheck import api\n"
        f"report = api.install({str(lock)!r}, {str(tmp_path / 'env')!r},"
        f" cache_dir={str(tmp_path / 'cache')!r})\n"
        "print(report.exit_code())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] in ("0", "ExitCode.OK"), done.stdout
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"


def test_a_cli_run_forks_its_linker_child_despite_the_signal_resender(tmp_path: Path) -> None:
    # every CLI run starts interrupts' resender thread, which holds nothing across a fork:
    # the linker child is forked (no second interpreter reading the lock again); a thread
    # of anyone else's still sends it to a fresh interpreter
    lock = _tiny_lock(tmp_path)
    code = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from envcheck import interrupts\n"
        "from envcheck.provision import linker\n"
        "from envcheck.provision.plan import read_plan\n"
        "interrupts.install()\n"
        f"plan = read_plan(Path({str(lock)!r}), 'linux-64')\n"
        "def child_argv():\n"
        "    with linker.Linker(plan) as child:\n"
        "        deadline = time.monotonic() + 30\n"
        "        # empty while an exec is still setting up the new image (Popen may return\n"
        "        # as soon as a vfork'ed child starts its exec), and once the child has left\n"
        "        while not (argv := Path(f'/proc/{child.pid}/cmdline').read_bytes()):\n"
        "            if child._reap(False) is not None or time.monotonic() > deadline:\n"
        "                child.err.seek(0)\n"
        "                sys.exit(f'linker child {child.code}: {child.err.read()!r}')\n"
        "            time.sleep(0.01)\n"
        "        return argv.split(b'\\0')\n"
        "print(b'envcheck.provision._link_child' in child_argv())\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "print(b'envcheck.provision._link_child' in child_argv())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr


def _run_code(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split("\n")


@pytest.mark.parametrize("ahead", [True, False], ids=["lock-read-ahead", "lock-read-on-plan"])
def test_a_prestarted_linker_child_links_the_lock_and_refuses_one_changed_after_it_was_read(
    tmp_path: Path, ahead: bool
) -> None:
    # the CLI forks its linker before it reads the lock; the install adopts that child, which
    # reads the lock itself (ahead, as soon as py-rattler is in, when prestart names it) and
    # must find the sha256 envcheck read
    lock = _tiny_lock(tmp_path)
    start = "lock, 'linux-64', cache" if ahead else ""
    head = f"""
import os, time
from pathlib import Path
from envcheck.errors import EnvcheckError
from envcheck.provision import install, linker
from envcheck.provision.plan import read_plan
lock, cache = Path({str(lock)!r}), Path({str(tmp_path / "cache")!r})
linker.prestart({start})
early = linker._EARLY[0][0]

def child_waits_for_a_job():  # its warm-up (and the lock read ahead) is over
    deadline = time.monotonic() + 120
    while "pipe" not in Path(f"/proc/{{early}}/wchan").read_text():
        assert time.monotonic() < deadline, "the linker child never got ready"
        time.sleep(0.01)
"""
    if ahead:  # the child read the lock before the change, envcheck after
        change_then_read = """
child_waits_for_a_job()
lock.write_bytes(lock.read_bytes() + b"# changed after the child read it\\n")
plan = read_plan(lock, "linux-64")
"""
    else:  # envcheck read the lock before the change, the child after (on the plan job)
        change_then_read = """
plan = read_plan(lock, "linux-64")
lock.write_bytes(lock.read_bytes() + b"# changed after envcheck read it\\n")
"""
    same = head + f"""
plan = read_plan(lock, "linux-64")
install.install(plan, Path({str(tmp_path / "env")!r}), cache)
print(not linker._EARLY)  # adopted by the install's Linker
"""
    assert _run_code(same)[0] == "True"
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"
    changed = head + change_then_read + """
with linker.Linker(plan, cache) as child:
    print(child.pid == early)
    try:
        child.run({"op": "extract", "items": []}, "unpacking")
    except EnvcheckError as e:
        print(e.message)
"""
    adopted, message = _run_code(changed)[:2]
    assert adopted == "True"
    assert message == f"unpacking failed: {lock} changed while envcheck read it", message


def test_the_plan_made_of_the_linker_childs_reading_is_read_plans(tmp_path: Path) -> None:
    # `envcheck install` takes its plan from what the linker child read (py-rattler imported
    # there only): the same sha256, records, packages and archive paths as read_plan's
    from envcheck.provision import _link_child
    from envcheck.provision.fetch import cache_path
    from envcheck.provision.plan import plan_of, read_plan

    data = Path(__file__).parents[1] / "data"
    real = ["holoviz_holoviews_fb85eeb_pixi.lock",  # pixi.lock, 478 linux-64 packages
            "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"]  # conda-lock, 682  # fmt: skip
    for lock in (_tiny_lock(tmp_path), *(data / name for name in real)):
        plan = read_plan(lock, "linux-64")  # the in-process reading, as the API makes it
        sha256, mine, rows = _link_child._read_lock(str(lock), "linux-64")
        reading = json.loads(json.dumps({"sha256": sha256, "platform": "linux-64", "rows": rows}))
        made = plan_of(lock, reading)
        assert (made.lock_sha256, made.platform) == (plan.lock_sha256, plan.platform)
        assert (made.conda, made.pip) == (plan.conda, plan.pip) and made.conda
        assert [r.url for r in mine.records] == [r.url for r in plan.records]
        assert [r.url for r in plan.records] == [p.url for p in plan.conda]
        cache = tmp_path / "cache"
        assert _link_child._archives(mine, str(cache)) == {
            p.url: str(cache_path(cache, p)) for p in plan.conda
        }
    with pytest.raises(EnvcheckError, match="no packages for platform osx-arm64"):
        _link_child._read_lock(str(lock), "osx-arm64")


def test_the_cli_imports_py_rattler_only_in_its_linker_child(tmp_path: Path) -> None:
    # `envcheck install` forks its linker child before its flags are parsed and takes its plan
    # from the child's reading of the lock: envcheck's own process never imports py-rattler
    lock = _tiny_lock(tmp_path)
    code = f"""
import sys
sys.argv = ["envcheck", "install", {str(lock)!r}, "--prefix", {str(tmp_path / "env")!r},
            "--cache-dir", {str(tmp_path / "cache")!r}, "--platform", "linux-64"]
from envcheck.cli import main
rc = main()
print(rc, "rattler" in sys.modules)
"""
    assert _run_code(code)[1] == "0 False"  # after the install's own line
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"


def test_a_prestarted_child_that_died_is_replaced_or_the_lock_read_by_envcheck(
    tmp_path: Path,
) -> None:
    # found dead when the lock is named: a new child is forked and reads it; dead before it
    # answered with its reading: envcheck discards it (and would read the lock in its own
    # process); the next install forks a child of its own and completes, none left
    lock = _tiny_lock(tmp_path)
    code = f"""
import os, signal, sys, time
from pathlib import Path
from envcheck.provision import linker
from envcheck.provision.command import InstallOptions, install_lock
lock, cache = Path({str(lock)!r}), Path({str(tmp_path / "cache")!r})

def kill_early():
    pid = linker._EARLY[0][0]
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{{pid}}/stat").read_text().split(")")[1].split()[0] != "Z":
        time.sleep(0.005)
    return pid

linker.prestart()
dead = kill_early()
linker.prestart(lock, "linux-64", cache)
print(linker._EARLY[0][0] != dead, linker.reading_pending())
print(linker.prestarted_reading()["sha256"] and "rattler" not in sys.modules)
linker.discard_prestarted()
linker.prestart(lock, "linux-64", cache)
kill_early()  # it had not answered: its imports take far longer than this
print(linker.prestarted_reading(), linker._EARLY)
out = install_lock(InstallOptions(lock, Path({str(tmp_path / "env")!r}), platform="linux-64",
                                  cache_dir=cache)).output
print(out.startswith("installed 1 conda"), linker._EARLY)
"""
    assert _run_code(code)[:4] == ["True True", "True", "None []", "True []"]
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"


def test_a_prestarted_linker_child_no_install_takes_is_ended(tmp_path: Path) -> None:
    # an install's child answers its last job and leaves (not waited for: reaped by the next
    # install); a no-op install (the stamp matches) never enters a Linker: its prestarted
    # child is killed and reaped before it returns
    lock = _tiny_lock(tmp_path)
    code = f"""
import os, time
from pathlib import Path
from envcheck.provision import linker
from envcheck.provision.command import InstallOptions, install_lock
opts = InstallOptions(Path({str(lock)!r}), Path({str(tmp_path / "env")!r}),
                      platform="linux-64", cache_dir=Path({str(tmp_path / "cache")!r}))
install_lock(opts)
me = Path(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children")
left = [int(p) for p in me.read_text().split()]
print(left == linker._LEFT[:len(left)])  # a child still there is one that was let go
for pid in left:  # it leaves on its own: a zombie within seconds
    deadline = time.monotonic() + 10
    while Path(f"/proc/{{pid}}/stat").read_text().split(")")[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child did not leave"
        time.sleep(0.01)
print(install_lock(opts).output.strip().endswith("nothing to do"), me.read_text().split())
print(linker._LEFT)
"""
    assert _run_code(code)[:3] == ["True", "True []", "[]"]


def test_metadata_is_validated_again_unless_a_finished_install_validated_it_under_these_rules(
    py39_env: Installed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envcheck.provision import install as install_module
    from envcheck.provision import validate
    from envcheck.provision.plan import read_plan
    from envcheck.provision.unpacked import VALIDATED

    checked: list[str] = []
    real = validate.check_package

    def spy(package: str, folder: Path, walk) -> int:  # noqa: ANN001 - the real one, counted
        checked.append(package)
        return real(package, folder, walk)

    monkeypatch.setattr(validate, "check_package", spy)
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    plan = read_plan(py39_env.world.lock, "linux-64")
    install_module.install(plan, tmp_path / "a", cache)
    conda = len(plan.conda)
    assert len(checked) == conda  # unpacked now: every package validated
    marks = sorted((cache / "verified").glob("*.digest"))
    assert len(marks) == conda and all(m.read_text().split()[2:] == [VALIDATED] for m in marks)
    install_module.install(plan, tmp_path / "b", cache)
    assert len(checked) == conda  # unchanged since, validated under these rules: not again
    key, dig, _ = marks[0].read_text().split()
    marks[0].write_text(f"{key} {dig} validated-0\n")  # validated under older rules
    install_module.install(plan, tmp_path / "c", cache)
    assert len(checked) == conda + 1
    marks[1].write_text(" ".join(marks[1].read_text().split()[:2]) + "\n")  # unpacked only
    install_module.install(plan, tmp_path / "d", cache)
    assert len(checked) == conda + 2
