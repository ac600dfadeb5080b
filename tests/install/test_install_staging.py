"""envcheck install as root beside what another user (uid nobody, for real) planted: a shared
parent without the sticky bit is refused unless --allow-shared-parent; with it, symlinks at every
name an install once used (and a few guesses) are never followed, a planted "old env" is never
restored, the prefix is a real directory of root's; a SIGKILL mid-link leaves the old env and
nothing under a name anyone could have guessed."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.install_checks import (
    beside,
    install_cmd,
    listing,
    many_lock_fixture,  # noqa: F401  (the fixture)
    one_line,
    read_stamp,
)
from tests.support.install_world import Installed, envcheck
from tests.support.small_channels import noarch_package, pixi_lock, records

pytestmark = pytest.mark.slow

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture(autouse=True)
def _root_with_setpriv() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (another uid, for real)")


@pytest.fixture
def shared() -> Iterator[Path]:
    """A team's envs directory: mode 0777, no sticky bit, under /tmp (which nobody can reach)."""
    d = Path(tempfile.mkdtemp(prefix="envcheck-shared-", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _tiny_lock(tmp_path: Path) -> Path:
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (b"tiny\n", 0o644, None)})
    return pixi_lock(tmp_path / "tiny.lock", root.as_uri(), records(root))


def _as_nobody(script: str) -> None:
    done = subprocess.run([*NOBODY, "sh", "-ec", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _root_only(path: Path) -> Path:
    """A directory of root's that nobody cannot write (checked as nobody)."""
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    probe = subprocess.run([*NOBODY, "touch", str(path / "x")], capture_output=True)
    assert probe.returncode != 0 and not (path / "x").exists()
    return path


def test_root_refuses_a_parent_others_can_write_unless_allowed(
    shared: Path, tmp_path: Path
) -> None:
    lock, cache = _tiny_lock(tmp_path), tmp_path / "cache"
    below = shared / "team"
    below.mkdir(mode=0o755)
    for prefix, where in ((shared / "env", shared), (below / "env", shared)):
        done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
        assert done.returncode == 4, done.stdout + done.stderr
        line = one_line(done.stderr)
        assert f"refusing to install {prefix} as root: {where} is writable by every user " \
               "without the sticky bit (mode 0777)" in line  # fmt: skip
        assert "--allow-shared-parent" in line
        assert not os.path.lexists(prefix) and beside(prefix) == []
    done = envcheck("install", lock, "--prefix", shared / "env", "--cache-dir", cache,
                    "--allow-shared-parent")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shared.chmod(0o1777)  # the sticky bit: others cannot rename what root made there
    done = envcheck("install", lock, "--prefix", below / "env", "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr


def _old_names(name: str) -> list[str]:
    """Every name beside the prefix an install once used for the coming pids, and guesses."""
    known = Path("/proc/sys/kernel/ns_last_pid")
    last = int(known.read_text()) if known.exists() else os.getpid()
    pids = [*range(last + 1, last + 400), 0, 1, 99999]
    names = [f".{name}.envcheck-{kind}-{pid}" for kind in ("staging", "old") for pid in pids]
    return [*names, f".{name}.envcheck-lock", f".{name}.envcheck-staging-",
            f".{name}.envcheck-tmp", f"{name}.tmp", f".{name}.tmp"]  # fmt: skip


def test_links_planted_by_another_user_are_never_followed_nor_restored(
    shared: Path, tmp_path: Path
) -> None:
    lock, cache = _tiny_lock(tmp_path), tmp_path / "cache"
    target = _root_only(tmp_path / "root-only")
    decoy = tmp_path / "decoy-env"  # what a planted "old env" names: root's, not an env
    (decoy / "conda-meta").mkdir(parents=True)
    (decoy / "marker").write_text("decoy\n")
    names = _old_names("env")
    plants = "\n".join(f"ln -s {target} {shared / n}" for n in names)
    _as_nobody(f"{plants}\nrm {shared / '.env.envcheck-old-1'}\n"
               f"ln -s {decoy} {shared / '.env.envcheck-old-1'}\n"
               # a directory dressed as a work directory, with a record naming the prefix
               f"mkdir -m 700 {shared / '.env.envcheck-staging-x'} "
               f"{shared / '.env.envcheck-staging-x/old'}\n"
               f"echo '{{\"prefix\": \"{shared / 'env'}\"}}' > "
               f"{shared / '.env.envcheck-staging-x/record'}\n")  # fmt: skip
    done = envcheck("install", lock, "--prefix", shared / "env", "--cache-dir", cache,
                    "--allow-shared-parent")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = shared / "env"
    st = os.lstat(prefix)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0
    assert (prefix / "share" / "tiny" / "a.txt").read_text() == "tiny\n"
    assert not (prefix / "marker").exists()
    assert os.listdir(target) == []  # nothing written through a link
    assert sorted(os.listdir(decoy)) == ["conda-meta", "marker"]
    assert "restored" not in done.stderr
    assert f"left .env.envcheck-old-1 beside {prefix} alone: a symlink" in done.stderr
    assert "left .env.envcheck-staging-x beside" in done.stderr
    assert "is owned by uid 65534" in done.stderr
    assert f"replaced {shared / '.env.envcheck-lock'}: it was a symlink" in done.stderr
    # every planted link is still a link of nobody's, to where it pointed; the lock file
    # (a link at the lock's name) was replaced by a regular file of root's
    for n in names:
        p = shared / n
        if n == ".env.envcheck-lock":
            assert stat.S_ISREG(os.lstat(p).st_mode) and os.lstat(p).st_uid == 0
        else:
            assert p.is_symlink() and os.lstat(p).st_uid == 65534, n
    assert sorted(set(beside(prefix)) - set(names)) == [".env.envcheck-staging-x"]


def test_a_prefix_that_is_another_users_symlink_is_refused(shared: Path, tmp_path: Path) -> None:
    lock, cache = _tiny_lock(tmp_path), tmp_path / "cache"
    target = _root_only(tmp_path / "root-only")
    _as_nobody(f"ln -s {target} {shared / 'env'}")
    done = envcheck("install", lock, "--prefix", shared / "env", "--cache-dir", cache,
                    "--allow-shared-parent")  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert (f"prefix {shared / 'env'} is a symlink owned by uid 65534, not by this user"
            in one_line(done.stderr))  # fmt: skip
    assert os.listdir(target) == [] and (shared / "env").is_symlink()


def test_sigkill_mid_link_keeps_the_old_env_and_leaves_no_guessable_name(
    py39_env: Installed, many_lock: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    prefix = tmp_path / "env"
    done = envcheck("install", py39_env.world.lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stderr
    before, stamp = listing(prefix), read_stamp(prefix)
    proc = subprocess.Popen(install_cmd(many_lock, prefix, cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    many = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        works = list(prefix.parent.glob(f".{prefix.name}.envcheck-staging-*"))
        many = works and works[0] / "stage" / "share" / "many"
        if many and many.exists():
            break
        time.sleep(0.02)
    assert many and many.exists(), proc.communicate()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert listing(prefix) == before and read_stamp(prefix) == stamp
    (left,) = beside(prefix)  # the work directory: mkdtemp's name, root's, 0700
    assert not left.endswith(str(proc.pid)) and left not in _old_names("env")
    st = os.lstat(prefix.parent / left)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == 0
    again = envcheck("install", py39_env.world.lock, "--prefix", prefix, "--cache-dir", cache)
    assert again.returncode == 0, again.stderr
    assert f"removed {left}" in again.stderr and "nothing to do" in again.stdout
    assert beside(prefix) == [] and listing(prefix) == before
