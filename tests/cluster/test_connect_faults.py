"""`verify cluster` against things that are not a healthy scheduler: real sockets that accept and
never answer, an HTTP server, a port that answers garbage, and addresses that cannot be one.
Each is one line, a documented exit code, bounded by --timeout, and nothing at shutdown."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from tests.support.deadlines import HANG
from tests.support.ports import free_port
from tests.support.subprocess_cluster import DASK_TIMEOUTS_PAST_HANG, run_envcheck

NOISE = ("Traceback", "Exception ignored", "Error in atexit")


def _one_clean_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert not any(n in stderr for n in NOISE), stderr
    return lines[0]


class _Server:
    """A TCP server on 127.0.0.1 with a behaviour per connection, in daemon threads."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)  # blackhole: keep it open, never answer
            if self.behaviour == "garbage":
                with contextlib.suppress(OSError):
                    conn.sendall(b"\x17\xfe\x00garbage, not a Dask frame\xff" * 64)

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


@pytest.fixture
def blackhole() -> Iterator[int]:
    server = _Server("blackhole")
    yield server.port
    server.close()


@pytest.fixture
def garbage() -> Iterator[int]:
    server = _Server("garbage")
    yield server.port
    server.close()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[int]:
    handler = http.server.SimpleHTTPRequestHandler
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_port_that_accepts_and_never_answers_is_unreachable_within_the_timeout(
    blackhole: int,
) -> None:
    # distributed's own timeouts are 600 s here: only --timeout ends the wait within HANG
    proc, took = run_envcheck("verify", "cluster", f"tcp://127.0.0.1:{blackhole}",
                              "--timeout", "3", timeout=2 * HANG, env=DASK_TIMEOUTS_PAST_HANG)
    assert proc.returncode == ExitCode.UNREACHABLE
    line = _one_clean_line(proc.stderr)
    assert "no scheduler answered" in line and "within 3 s" in line, line
    assert took < HANG, took


@pytest.mark.parametrize("kind", ["http", "garbage"])
def test_something_else_on_the_port_is_not_a_dask_scheduler(
    kind: str, http_server: int, garbage: int
) -> None:
    port = http_server if kind == "http" else garbage
    proc, took = run_envcheck("verify", "cluster", f"tcp://127.0.0.1:{port}",
                              "--timeout", "5", timeout=2 * HANG, env=DASK_TIMEOUTS_PAST_HANG)
    assert proc.returncode == ExitCode.UNREACHABLE, proc.stderr
    assert took < HANG, took  # --timeout holds: distributed's own timeouts are 600 s here
    line = _one_clean_line(proc.stderr)
    assert f"127.0.0.1:{port}" in line
    assert "not a Dask scheduler" in line or ("no scheduler answered" in line
                                              and "within 5 s" in line), line


@pytest.mark.parametrize(
    "address, says",
    [
        ("not-an-address:::", "bad scheduler address"),
        ("tcp://[::1", "bad scheduler address"),
        ("tcp://127.0.0.1:abc", "bad scheduler address"),
        ("tcp://127.0.0.1:0", "port must be 1-65535"),
        ("tcp://:8786", "no host"),
        ("inproc://192.168.1.1/123/1", "in-process address"),
        ("", "empty scheduler address"),
        ("carrier-pigeon://host:1", "unknown protocol"),
    ],
)
def test_bad_addresses_are_refused_before_connecting(address: str, says: str) -> None:
    proc, took = run_envcheck("verify", "cluster", address, "--timeout", "600",
                              timeout=2 * HANG)
    assert proc.returncode == ExitCode.BAD_INPUT
    assert says in _one_clean_line(proc.stderr)
    assert took < HANG  # no connect attempt: the 600 s timeout is never waited for


def test_a_scheduler_file_holding_a_bad_address_is_refused(tmp_path: Path) -> None:
    sched = tmp_path / "scheduler.json"
    sched.write_text(json.dumps({"address": "tcp://127.0.0.1:abc"}))
    proc, _ = run_envcheck("verify", "cluster", "--scheduler-file", str(sched), timeout=60)
    assert proc.returncode == ExitCode.BAD_INPUT
    assert "bad scheduler address" in _one_clean_line(proc.stderr)


def test_unreadable_tls_files_are_bad_input_before_connecting(tmp_path: Path) -> None:
    pems = []
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
        pems.append(str(tmp_path / name))
    proc, took = run_envcheck(
        "verify", "cluster", f"tls://127.0.0.1:{free_port()}",
        "--tls-ca-file", pems[0], "--tls-cert", pems[1], "--tls-key", pems[2], timeout=60,
    )
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    line = _one_clean_line(proc.stderr)
    assert "TLS files not usable" in line and pems[0] in line


def test_tls_flags_with_a_tcp_address_are_refused(tmp_path: Path) -> None:
    from tests.cluster.test_tls import _write_pki

    pems = [str(p) for p in _write_pki(tmp_path, "client")]
    proc, took = run_envcheck(
        "verify", "cluster", f"tcp://127.0.0.1:{free_port()}",
        "--tls-ca-file", pems[0], "--tls-cert", pems[1], "--tls-key", pems[2], timeout=60,
    )
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    line = _one_clean_line(proc.stderr)
    assert "tls://" in line
