"""envcheck install: a real lock (envcheck build against a served channel of real packages)
installed into real prefixes; damaged packages, bad input and Ctrl-C in real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.lockfile.read import read_lock
from tests.support.condapkg import serve
from tests.support.install_checks import install_cmd, sha256
from tests.support.install_world import PIP_ENTRY, Installed, World, envcheck

pytestmark = pytest.mark.slow


def _relocated_lock(world: World, new_base: str, dest: Path) -> Path:
    """The same lock with its package URLs under ``new_base`` (another mirror of the channel)."""
    dest.write_text(world.lock.read_text().replace(world.url, new_base))
    return dest


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_installed_env_runs_python_imports_dask_and_records_the_lock(py39_env: Installed) -> None:
    world, prefix = py39_env.world, py39_env.prefix
    done = subprocess.run(
        [
            prefix / "bin" / "python3",
            "-c",
            "import sys, dask, six;"
            "print(sys.version.split()[0], dask.__version__, six.__version__, sys.prefix)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == [world.python_version, "2024.8.0", "1.17.0", str(prefix)]
    lock = read_lock(world.lock)
    conda = [p for p in lock.packages if p.manager == "conda"]
    meta = prefix / "conda-meta"
    for p in conda:  # every locked package linked, recorded with the lock's URL
        record = json.loads((meta / f"{p.name}-{p.version}-{p.build}.json").read_text())
        assert (record["url"], record["sha256"]) == (p.url, p.sha256)
    assert (prefix / "lib/python3.9/site-packages/six-1.17.0.dist-info").is_dir()
    stamp = json.loads((meta / "envcheck-install.json").read_text())
    assert stamp["lock_sha256"] == sha256(world.lock)
    assert (stamp["platform"], stamp["conda_packages"], stamp["pip_packages"]) == (
        "linux-64",
        len(conda),
        1,
    )
    summary = " ".join(py39_env.first.stdout.split())
    assert summary.startswith(f"installed {len(conda)} conda + 1 pip packages into {prefix} (")
    assert "MB downloaded" in summary and sha256(world.lock)[:12] in summary
    assert PIP_ENTRY.startswith("six==")


def test_second_install_of_the_same_lock_is_a_noop_that_says_so(py39_env: Installed) -> None:
    stamp = py39_env.prefix / "conda-meta" / "envcheck-install.json"
    before = (stamp.stat().st_mtime_ns, sorted(os.listdir(py39_env.prefix / "conda-meta")))
    done = envcheck(
        "install", py39_env.world.lock, "--prefix", py39_env.prefix, "--cache-dir", py39_env.cache
    )
    assert done.returncode == 0, done.stderr
    assert "nothing to do" in done.stdout and "already installed" in done.stdout
    assert (stamp.stat().st_mtime_ns, sorted(os.listdir(py39_env.prefix / "conda-meta"))) == before


@pytest.mark.parametrize(
    ("damage", "transport", "existing"),
    [("flip", "http", False), ("truncate", "file", True)],
)
def test_damaged_package_fails_naming_it_and_touches_no_prefix(
    py39_world: World, tmp_path: Path, damage: str, transport: str, existing: bool
) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(py39_world.channel_dir, mirror)
    target = mirror / "noarch" / "dask-2024.8.0-py_0.conda"
    data = bytearray(target.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[len(data) // 2 :]
    target.write_bytes(bytes(data))
    locked = next(p for p in read_lock(py39_world.lock).packages if p.name == "dask")
    prefix = tmp_path / "env"
    if existing:
        (prefix / "conda-meta").mkdir(parents=True)
        (prefix / "conda-meta" / "history").write_text("keep me\n")
        (prefix / "bin").mkdir()
        (prefix / "bin" / "tool").write_text("#!/bin/sh\n")
    before = _tree(prefix) if existing else None

    def run(base: str) -> subprocess.CompletedProcess:
        lock = _relocated_lock(py39_world, base, tmp_path / "mirror.conda-lock.yml")
        return envcheck("install", lock, "--prefix", prefix, "--cache-dir", tmp_path / "cache")

    if transport == "http":
        with serve(mirror) as url:
            done = run(url)
    else:
        done = run(mirror.resolve().as_uri())
    assert done.returncode == 4, done.stdout + done.stderr
    line = _one_line(done.stderr)
    assert "conda package dask 2024.8.0" in line
    if transport == "http":
        assert f"lock says {locked.sha256}, file has {sha256(target)}" in line
    else:  # a local file's own hash is never printed (an oracle on files the lock names)
        assert f"lock says {locked.sha256}, the file does not match" in line
        assert sha256(target) not in line
    if existing:
        assert _tree(prefix) == before
    else:
        assert not prefix.exists()
    assert not list((tmp_path / "cache" / "archives").glob("*/dask-*"))


def test_cache_hits_are_hashed_again_before_linking(py39_env: Installed, tmp_path: Path) -> None:
    # a lock whose URLs nobody serves: only the cache can provide the packages
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    lock = _relocated_lock(
        py39_env.world, f"http://127.0.0.1:{_closed_port()}", tmp_path / "gone.conda-lock.yml"
    )
    (cached,) = (cache / "archives").glob("*/dask-2024.8.0-py_0.conda")
    good = cached.read_bytes()
    cached.write_bytes(good[:-100])  # damaged in the cache
    done = envcheck("install", lock, "--prefix", tmp_path / "bad", "--cache-dir", cache)
    assert done.returncode == 7, done.stdout + done.stderr
    assert "cannot fetch dask 2024.8.0" in _one_line(done.stderr)
    assert not (tmp_path / "bad").exists()

    cached.write_bytes(good)  # intact again: installs from the cache alone
    done = envcheck("install", lock, "--prefix", tmp_path / "good", "--cache-dir", cache)
    assert done.returncode == 0, done.stderr
    assert "0.0 MB downloaded" in " ".join(done.stdout.split())
    assert (tmp_path / "good" / "conda-meta" / "envcheck-install.json").is_file()


def test_unreachable_url_exits_7_after_a_bounded_retry(py39_world: World, tmp_path: Path) -> None:
    lock = _relocated_lock(
        py39_world, f"http://127.0.0.1:{_closed_port()}", tmp_path / "gone.conda-lock.yml"
    )
    start = time.monotonic()
    done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir", tmp_path / "c")
    assert done.returncode == 7, done.stdout + done.stderr
    line = _one_line(done.stderr)
    assert "cannot fetch" in line and "(after 3 tries)" in line
    assert time.monotonic() - start < 60
    assert not (tmp_path / "env").exists()


def test_a_channel_mirror_serves_a_lock_whose_channel_is_unreachable(
    py39_world: World, tmp_path: Path
) -> None:
    """ENVCHECK_CHANNEL_MIRRORS: the lock names a channel no one reaches; its files come from
    the mirror (the served channel), every hash the lock's."""
    channel = "https://conda.example.invalid/world"
    lock = _relocated_lock(py39_world, channel, tmp_path / "elsewhere.conda-lock.yml")
    env = {**os.environ, "ENVCHECK_CHANNEL_MIRRORS": f"{channel}={py39_world.url}"}
    done = envcheck("install", lock, "--prefix", tmp_path / "env", "--cache-dir",
                    tmp_path / "c", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "env" / "conda-meta" / "envcheck-install.json").is_file()
    gone = envcheck("install", lock, "--prefix", tmp_path / "env2", "--cache-dir",
                    tmp_path / "c2", "--fetch-timeout", "20")
    assert gone.returncode == 7 and "DNS lookup failed" in _one_line(gone.stderr)


@pytest.mark.parametrize("case", ["missing lock", "not a lock", "platform", "prefix under a file"])
def test_bad_input_is_one_line_exit_4(py39_world: World, tmp_path: Path, case: str) -> None:
    lock, prefix, extra = py39_world.lock, tmp_path / "env", []
    if case == "missing lock":
        lock = tmp_path / "nope.conda-lock.yml"
        expect = "does not exist"
    elif case == "not a lock":
        lock = tmp_path / "junk.conda-lock.yml"
        lock.write_text("just: [some, yaml]\n")
        expect = "is not a readable conda-lock or pixi lock"
    elif case == "platform":
        extra = ["--platform", "osx-arm64"]
        expect = "has no packages for platform osx-arm64; it has: linux-64"
    else:
        (tmp_path / "file").write_text("")
        prefix = tmp_path / "file" / "env"
        expect = "is not a directory"
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", tmp_path / "c", *extra)
    assert done.returncode == 4, done.stdout + done.stderr
    assert expect in _one_line(done.stderr)
    assert not prefix.exists()


def test_ctrl_c_exits_130_and_leaves_no_prefix(py39_world: World, tmp_path: Path) -> None:
    cache, prefix = tmp_path / "cache", tmp_path / "env"
    with serve(py39_world.channel_dir, chunk_delay_s=0.05) as slow:
        lock = _relocated_lock(py39_world, slow, tmp_path / "slow.conda-lock.yml")
        proc = subprocess.Popen(
            install_cmd(lock, prefix, cache, "--json", str(tmp_path / "r.json")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not list(cache.glob("archives/*/.part-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err
    assert not prefix.exists()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 130 and report["title"] == "envcheck install"
    assert report["results"][0]["message"] == "interrupted (SIGINT, Ctrl-C) before it finished"
    assert not list(cache.glob("archives/*/.part-*"))


def test_pixi_lock_of_the_same_records_installs_too(py39_env: Installed, tmp_path: Path) -> None:
    import rattler

    env = rattler.LockFile.from_path(py39_env.world.lock).default_environment()
    platform = env.platforms()[0]
    records = env.conda_repodata_records_for_platform(platform)
    pixi = rattler.LockFile([rattler.LockPlatform("linux-64")])
    pixi.set_channels("default", [rattler.LockChannel(py39_env.world.url)])
    for r in records:
        pixi.add_conda_package("default", pixi.platforms()[0], r)
    path = tmp_path / "pixi.lock"
    pixi.to_path(path)
    prefix = tmp_path / "env"
    done = envcheck("install", path, "--prefix", prefix, "--cache-dir", py39_env.cache)
    assert done.returncode == 0, done.stdout + done.stderr
    names = sorted(p.name for p in (prefix / "conda-meta").glob("*.json"))
    want = sorted(f"{r.file_name.removesuffix('.conda')}.json" for r in records)
    assert names == sorted([*want, "envcheck-install.json"])


def test_verify_node_prefix_passes_the_packages_check_against_the_lock(
    py39_env: Installed,
) -> None:
    done = envcheck(
        "verify",
        "node",
        "--prefix",
        py39_env.prefix,
        "--lock",
        py39_env.world.lock,
        "--expect-gpus",
        "0",
        "--json",
        py39_env.prefix.parent / "verify.json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((py39_env.prefix.parent / "verify.json").read_text())
    packages = [r for r in report["results"] if r["check"] == "packages"]
    assert [r["status"] for r in packages] == ["pass"], packages


def _in_a_terminal(args: list[str], timeout: float = 120) -> tuple[int, bytes]:
    """Run a command with a pseudo-terminal as stdout/stderr; its exit code and output."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once
        os.environ["COLUMNS"] = "120"
        os.execv(sys.executable, [sys.executable, *args])
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out


def test_progress_bars_on_a_terminal_and_none_with_quiet(
    py39_env: Installed, tmp_path: Path
) -> None:
    base = [
        "-m",
        "envcheck",
        "install",
        str(py39_env.world.lock),
        "--cache-dir",
        str(py39_env.cache),
    ]
    rc, out = _in_a_terminal([*base, "--prefix", str(tmp_path / "a")])
    assert rc == 0, out
    assert b"fetch + check" in out and b"link" in out and b"installed 22 conda" in out
    # the bar's total is the lock's file count, known before the first byte
    assert b"/23" in out and b"files" in out and b"/?" not in out
    rc, out = _in_a_terminal([*base, "--prefix", str(tmp_path / "b"), "--quiet"])
    assert rc == 0, out
    assert b"fetch + check" not in out and b"installed 22 conda" in out


def test_another_lock_moves_an_existing_env_to_it(py39_env: Installed, tmp_path: Path) -> None:
    import rattler

    env = rattler.LockFile.from_path(py39_env.world.lock).default_environment()
    records = env.conda_repodata_records_for_platform(env.platforms()[0])
    smaller = rattler.LockFile([rattler.LockPlatform("linux-64")])
    smaller.set_channels("default", [rattler.LockChannel(py39_env.world.url)])
    for r in records:
        if r.name.normalized != "distributed":
            smaller.add_conda_package("default", smaller.platforms()[0], r)
    small_lock = tmp_path / "pixi.lock"
    smaller.to_path(small_lock)
    prefix = tmp_path / "env"
    common = ["--prefix", prefix, "--cache-dir", py39_env.cache]
    site = prefix / "lib/python3.9/site-packages"
    for lock, has_distributed in (
        (py39_env.world.lock, True),
        (small_lock, False),
        (py39_env.world.lock, True),
    ):
        done = envcheck("install", lock, *common)
        assert done.returncode == 0, done.stdout + done.stderr
        files = [p for p in (site / "distributed").rglob("*") if p.is_file()]
        assert bool(files) == has_distributed, files[:5]
        assert bool(list((prefix / "conda-meta").glob("distributed-*.json"))) == has_distributed
        stamp = json.loads((prefix / "conda-meta" / "envcheck-install.json").read_text())
        assert stamp["lock_sha256"] == sha256(lock)
