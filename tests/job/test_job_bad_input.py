"""verify job's bad input around its secret and its rendezvous, each one line on stderr and
the documented exit code (docs/exit-codes.md): a real rank, started by hand as pdsh or ssh
loops start them (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from envcheck.verify.job import auth
from tests.support.ports import free_port
from tests.unit.test_input_paths import SAYS, planted

pytest.importorskip("torch.distributed")

ENVCHECK = [sys.executable, "-m", "envcheck"]  # the code under test, not an installed script


def _rank(tmp: Path, rank: int, port: int, *, secret: bytes | None = None,
          timeout: int = 5, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVCHECK_JOB_")}
    env.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), **extra)
    envb = {k.encode(): v.encode() for k, v in env.items()}
    if secret is not None:
        envb[auth.SECRET_ENV.encode()] = secret
    return subprocess.run([*ENVCHECK, "verify", "job", "--timeout", str(timeout)], env=envb,
                          capture_output=True, text=True, errors="replace", timeout=180,
                          cwd=tmp)


def _one_line(p: subprocess.CompletedProcess) -> str:
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


@pytest.mark.parametrize(("secret", "says"), [
    (b"\xff\xfe" + b"a" * 40, "ENVCHECK_JOB_SECRET is not UTF-8 text"),
    (b"short", "ENVCHECK_JOB_SECRET is set but shorter than 32 characters"),
])
@pytest.mark.parametrize("rank", [0, 1])
def test_a_bad_exported_secret_is_one_line_exit_4(tmp_path, secret, says, rank):
    p = _rank(tmp_path, rank, free_port(), secret=secret)
    assert p.returncode == 4, p.stderr
    assert says in _one_line(p)


def _secret_file(tmp: Path, port: int) -> Path:
    """Where the ranks of a hand-started launch on `port` keep their secret file."""
    name = f"env//127.0.0.1/{port}"
    return tmp / "secrets" / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".key")


@pytest.mark.parametrize("rank", [0, 1])
def test_a_secret_file_that_is_a_directory_is_one_line_exit_4(tmp_path, rank):
    port = free_port()
    path = _secret_file(tmp_path, port)
    path.mkdir(parents=True)
    path.parent.chmod(0o700)
    p = _rank(tmp_path, rank, port, ENVCHECK_JOB_SECRET_DIR=str(path.parent))
    assert p.returncode == 4, p.stderr
    assert f"the job's secret file {path} is a directory" in _one_line(p)


@pytest.mark.parametrize("kind", ["fifo", "mknod", "kmsg-link", "link"])
def test_a_secret_file_that_is_not_a_private_file_is_refused_before_it_is_read(tmp_path, kind):
    """A rank reads the secret file through open_input, links not followed: a FIFO nobody
    writes, a kmsg device node, a link into /proc or to a real secret elsewhere, planted
    under its name, is one line, exit 4, before a byte is read (no hang: 180 s catches one)."""
    port = free_port()
    path = _secret_file(tmp_path, port)
    path.parent.mkdir(mode=0o700)
    if kind == "link":
        real = tmp_path / "real.key"
        real.write_bytes(b"s" * 64)
        real.chmod(0o600)
        path.symlink_to(real)
    else:
        planted(path.parent, kind).rename(path)
    p = _rank(tmp_path, 1, port, ENVCHECK_JOB_SECRET_DIR=str(path.parent))
    assert p.returncode == 4, p.stderr
    says = {"link": "is a symbolic link", **SAYS}[kind]
    line = _one_line(p)
    assert f"the job's secret file {path} " in line and says in line, line


def test_rank_0_refuses_a_secret_directory_under_dev(tmp_path):
    """The ranks that read the secret file refuse /dev (open_input): rank 0 refuses to write
    it there, in one line, rather than leave them a file they will not read."""
    where = Path("/dev/shm") / f"envcheck-test-{os.getpid()}"
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    p = _rank(tmp_path, 0, free_port(), ENVCHECK_JOB_SECRET_DIR=str(where))
    assert p.returncode == 4, p.stderr
    assert f"the secret directory {where} is under /dev" in _one_line(p)
    assert not where.exists()


def test_a_short_secret_file_is_one_line_exit_4(tmp_path):
    port = free_port()
    path = _secret_file(tmp_path, port)
    path.parent.mkdir(mode=0o700)
    path.write_bytes(b"0123456789")
    path.chmod(0o600)
    p = _rank(tmp_path, 1, port, ENVCHECK_JOB_SECRET_DIR=str(path.parent))
    assert p.returncode == 4, p.stderr
    line = _one_line(p)
    assert f"the job's secret file {path} holds 10 bytes, fewer than 32" in line
    assert "too short" in line


def test_rank_0_never_creates_a_missing_home(tmp_path):
    home = tmp_path / "no-such-home"
    p = _rank(tmp_path, 0, free_port(), HOME=str(home))
    assert p.returncode == 4, p.stderr
    assert f"$HOME ({home}) is not a directory" in _one_line(p)
    assert not home.exists()


def test_garbage_on_master_port_is_one_line(tmp_path):
    """Something else answers on MASTER_PORT with bytes that are not TCPStore's: the rank
    says so in one line (c10d's own C++ backtraces stay off)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"\xff\xfe\x00SSH-2.0-OpenSSH_9.6 garbage\r\n" * 8)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        p = _rank(tmp_path, 1, port, secret=b"s" * 64)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert p.returncode == 3, p.stderr
    line = _one_line(p)
    assert line.startswith("envcheck verify job: rank 1/2: "), line
    assert "127.0.0.1" in line, line
