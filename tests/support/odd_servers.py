"""Loopback HTTP servers that misbehave on purpose: one that drips a byte a second, one that
closes the connection halfway through a file (the first N times, or always)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class OddServer:
    """Serves the files under ``root`` by path; ``mode`` is "drip" or "truncate"."""

    def __init__(self, root: Path, mode: str, truncate_times: int = 1 << 30) -> None:
        self.root, self.mode, self.truncate_times = root, mode, truncate_times
        self.requests: list[str] = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.closed = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            path = head.split(b" ")[1].decode()
            self.requests.append(path)
            try:
                data = (self.root / path.lstrip("/")).read_bytes()
            except OSError:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(
                f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            with contextlib.suppress(OSError):  # the client went away
                self._body(conn, data)

    def _body(self, conn: socket.socket, data: bytes) -> None:
        if self.mode == "drip":
            for i in range(len(data)):
                if self.closed.is_set():
                    return
                conn.sendall(data[i : i + 1])
                time.sleep(1.0)
        elif self.mode == "truncate" and len(self.requests) <= self.truncate_times:
            conn.sendall(data[: len(data) // 2])  # then close: half the announced length
        else:
            conn.sendall(data)


@contextmanager
def odd_server(root: Path, mode: str, truncate_times: int = 1 << 30) -> Iterator[OddServer]:
    server = OddServer(root, mode, truncate_times)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.closed.set()
        server.sock.close()
