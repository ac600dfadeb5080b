"""Rank 0's rendezvous store: TCPStore's wire protocol, served in one thread, every byte bounded.

The other ranks (and rank 0 itself) talk to it with torch's own TCPStore client; gloo forms
its group through it. TCPStore's own server keeps whatever any process that reaches the port
sends (a stranger pushed 1.4 GB into rank 0 in 10 s). This one holds, at most (Limits):

- per request: a key of KEY bytes, a value of `value` bytes, KEYS keys in one list, a reply
  of `reply` bytes; a request that would pass them, or a type it does not know, closes that
  connection;
- per connection: one request not yet complete (Limits.request bytes), WINDOW bytes of
  replies its peer has not read (past that it is not read until the peer reads: a peer that
  never reads cannot make the store queue more), and a deadline: a connection that has not
  sent TCPStore's handshake within HANDSHAKE seconds is closed;
- in all: `connections` at once (more are closed as they come), `stored` bytes of keys and
  values and `entries` keys; a request that would pass them closes its connection.

So rank 0's memory under any flood stays below Limits.bound() beyond what it held before.
The wire protocol (torch 2.x): one type byte, then strings as u64 length + bytes, integers as
i64, lists as u64 count + strings, little-endian.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

MAGIC = 0x3C85F7CE  # TCPStore's validation number
KEY = 4 << 10  # bytes of one key
KEYS = 1024  # keys in one CHECK, WAIT, MULTI_GET or MULTI_SET
WINDOW = 256 << 10  # bytes of replies a peer has not read before it is no longer read
CHUNK = 64 << 10  # bytes read from a connection at once
HANDSHAKE = 10.0  # seconds a connection has to send TCPStore's handshake

(VALIDATE, SET, COMPARE_SET, GET, ADD, CHECK, WAIT, GETNUMKEYS, DELETE_KEY, APPEND, MULTI_GET,
 MULTI_SET, CANCEL_WAIT, PING) = range(14)


@dataclass(frozen=True)
class Limits:
    connections: int  # at once
    stored: int  # bytes of keys and values
    entries: int  # keys
    value: int  # bytes of one value
    reply: int  # bytes of the reply to one request

    @classmethod
    def for_world(cls, world: int) -> Limits:
        """What a launch of `world` ranks needs with room to spare: a rank writes a few KiB
        (its arrival, phases, heartbeat) over a handful of connections, and gloo's address
        of it for every other rank (about 64 bytes each)."""
        value = max(256 << 10, 128 * world)  # envcheck's own signed values: at most 64 KiB
        return cls(connections=16 + 4 * world, stored=(8 << 20) + world * (32 << 10) +
                   64 * world * world, entries=4096 + 64 * world, value=value,
                   reply=max(1 << 20, 64 * world * world))

    @property
    def request(self) -> int:
        """Bytes of one request not yet complete: two values and a few keys, and one read."""
        return 2 * self.value + 4 * KEY + CHUNK

    def bound(self) -> int:
        """Bytes the store can hold at most: its data (and a copy in flight), each key's
        bookkeeping, and every connection's buffers: a request, unread replies up to WINDOW
        and one reply past them."""
        per_conn = self.request + WINDOW + self.reply + (16 << 10)
        return 2 * self.stored + 512 * self.entries + self.connections * per_conn


class _Closed(Exception):
    """This connection broke the protocol or a limit: close it."""


@dataclass
class _Conn:
    sock: socket.socket
    since: float
    valid: bool = False
    inbox: bytearray = field(default_factory=bytearray)
    outbox: bytearray = field(default_factory=bytearray)
    waiting: list[bytes] = field(default_factory=list)  # keys of its pending WAIT


class _Reader:
    """One request from the front of a buffer; Incomplete until all of it is there."""

    class Incomplete(Exception):
        pass

    def __init__(self, data: bytearray) -> None:
        self.data, self.at = data, 1

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise _Reader.Incomplete
        out = bytes(self.data[self.at:self.at + n])
        self.at += n
        return out

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def string(self, limit: int) -> bytes:
        n = self.u64()
        if n > limit:
            raise _Closed(f"a string of {n} bytes, more than {limit}")
        return self.take(n)

    def key_list(self) -> list[bytes]:
        n = self.u64()
        if n > KEYS:
            raise _Closed(f"{n} keys in one request, more than {KEYS}")
        return [self.string(KEY) for _ in range(n)]


def _blob(value: bytes) -> bytes:
    return struct.pack("<Q", len(value)) + value


class BoundedStore:
    """The store, listening on `sock` (bound by listen.listen), served by a daemon thread."""

    def __init__(self, sock: socket.socket, limits: Limits) -> None:
        self.sock, self.limits = sock, limits
        self.data: dict[bytes, bytes] = {}
        self.stored = 0
        self.refused: list[str] = []  # why connections were closed (the first few)
        self.closed = 0  # connections closed for breaking the protocol or a limit
        self._conns: dict[socket.socket, _Conn] = {}
        self._sel = selectors.DefaultSelector()
        self._stop = threading.Event()
        sock.setblocking(False)
        self._sel.register(sock, selectors.EVENT_READ)
        self.port = int(sock.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, name="envcheck-store", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)

    # --- the loop ---------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                for key, mask in self._sel.select(0.2):
                    if key.fileobj is self.sock:
                        self._accept()
                    else:
                        self._io(self._conns.get(key.fileobj), mask)  # type: ignore[arg-type]
                self._expire()
        finally:
            for conn in list(self._conns.values()):
                self._drop(conn, "")
            self._sel.close()
            self.sock.close()

    def _accept(self) -> None:
        try:
            sock, _ = self.sock.accept()
        except OSError:
            return
        if len(self._conns) >= self.limits.connections:
            self._note(f"more than {self.limits.connections} connections at once")
            sock.close()
            return
        sock.setblocking(False)
        conn = _Conn(sock, time.monotonic())
        self._conns[sock] = conn
        self._sel.register(sock, selectors.EVENT_READ)

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in list(self._conns.values()):
            if not conn.valid and now - conn.since > HANDSHAKE:
                self._drop(conn, f"no handshake within {HANDSHAKE:g} s")

    def _io(self, conn: _Conn | None, mask: int) -> None:
        if conn is None:
            return
        try:
            if mask & selectors.EVENT_WRITE and conn.outbox:
                sent = conn.sock.send(conn.outbox)
                del conn.outbox[:sent]
            if mask & selectors.EVENT_READ and len(conn.outbox) < WINDOW:
                chunk = conn.sock.recv(CHUNK)
                if not chunk:
                    raise _Closed("")
                conn.inbox += chunk
                if len(conn.inbox) > self.limits.request:
                    raise _Closed(f"a request of more than {self.limits.request} bytes")
            self._work(conn)
        except (_Closed, OSError) as e:
            self._drop(conn, str(e) if isinstance(e, _Closed) else "")
            return
        self._watch(conn)

    def _watch(self, conn: _Conn) -> None:
        """Read a connection only while its peer reads its replies; write while any wait."""
        events = selectors.EVENT_WRITE if conn.outbox else 0
        if len(conn.outbox) < WINDOW:
            events |= selectors.EVENT_READ
        if conn.sock in self._conns:
            self._sel.modify(conn.sock, events or selectors.EVENT_READ)

    def _work(self, conn: _Conn) -> None:
        while conn.inbox and len(conn.outbox) < WINDOW:
            reader = _Reader(conn.inbox)
            try:
                self._request(conn, conn.inbox[0], reader)
            except _Reader.Incomplete:
                return
            del conn.inbox[:reader.at]

    def _drop(self, conn: _Conn, why: str) -> None:
        if why:
            self._note(why)
        self._conns.pop(conn.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(conn.sock)
        conn.sock.close()

    def _note(self, why: str) -> None:
        self.closed += 1
        if len(self.refused) < 16 and why not in self.refused:
            self.refused.append(why)

    # --- the requests -----------------------------------------------------------------------

    def _request(self, conn: _Conn, kind: int, r: _Reader) -> None:
        if kind == VALIDATE:
            if struct.unpack("<I", r.take(4))[0] != MAGIC:
                raise _Closed("not TCPStore's handshake")
            conn.valid = True
            return
        if not conn.valid:
            raise _Closed("a request before TCPStore's handshake")
        if kind == PING:
            conn.outbox += r.take(4)
        elif kind in (SET, APPEND):
            key, value = r.string(KEY), r.string(self.limits.value)
            self._put(key, self.data.get(key, b"") + value if kind == APPEND else value)
        elif kind == MULTI_SET:
            n = r.u64()
            if n > KEYS:
                raise _Closed(f"{n} keys in one request, more than {KEYS}")
            pairs = [(r.string(KEY), r.string(self.limits.value)) for _ in range(n)]
            for key, value in pairs:
                self._put(key, value)
        elif kind == COMPARE_SET:
            value = self.limits.value
            self._compare_set(conn, r.string(KEY), r.string(value), r.string(value))
        elif kind == GET:
            key = r.string(KEY)
            if key not in self.data:
                raise _Closed("a GET of a key that is not there")
            conn.outbox += _blob(self.data[key])
        elif kind == ADD:
            key, delta = r.string(KEY), struct.unpack("<q", r.take(8))[0]
            try:
                now = int(self.data.get(key, b"0")) + delta
            except ValueError:
                raise _Closed("an ADD to a key that holds no number") from None
            self._put(key, str(now).encode())
            conn.outbox += struct.pack("<q", now)
        else:
            self._query(conn, kind, r)

    def _query(self, conn: _Conn, kind: int, r: _Reader) -> None:
        if kind == CHECK:
            conn.outbox += b"\x00" if all(k in self.data for k in r.key_list()) else b"\x01"
        elif kind == WAIT:
            keys = r.key_list()
            if all(k in self.data for k in keys):
                conn.outbox += b"\x00"
            else:
                conn.waiting = keys
        elif kind == CANCEL_WAIT:
            conn.waiting = []
            conn.outbox += b"\x01"
        elif kind == MULTI_GET:
            keys = r.key_list()
            if any(k not in self.data for k in keys):
                raise _Closed("a MULTI_GET of a key that is not there")
            if sum(len(self.data[k]) + 8 for k in keys) > self.limits.reply:
                raise _Closed(f"a reply of more than {self.limits.reply} bytes")
            for k in keys:
                conn.outbox += _blob(self.data[k])
        elif kind == GETNUMKEYS:
            conn.outbox += struct.pack("<q", len(self.data))
        elif kind == DELETE_KEY:
            key = r.string(KEY)
            gone = self.data.pop(key, None)
            if gone is not None:
                self.stored -= len(key) + len(gone)
            conn.outbox += struct.pack("<q", int(gone is not None))
        else:
            raise _Closed(f"request type {kind}, not one envcheck serves")

    def _compare_set(self, conn: _Conn, key: bytes, expected: bytes, desired: bytes) -> None:
        held = self.data.get(key)
        if held is None and expected:
            conn.outbox += _blob(expected)
        elif held is None or held == expected:
            self._put(key, desired)
            conn.outbox += _blob(desired)
        else:
            conn.outbox += _blob(held)

    def _put(self, key: bytes, value: bytes) -> None:
        old = self.data.get(key)
        grow = len(value) - (len(old) if old is not None else -len(key))
        if len(value) > self.limits.value:
            raise _Closed(f"a value of more than {self.limits.value} bytes")
        if self.stored + grow > self.limits.stored:
            raise _Closed(f"the store would hold more than {self.limits.stored} bytes")
        if old is None and len(self.data) >= self.limits.entries:
            raise _Closed(f"the store would hold more than {self.limits.entries} keys")
        self.data[key] = value
        self.stored += grow
        if old is None:
            self._wake()

    def _wake(self) -> None:
        """Answer every WAIT whose keys are all there now."""
        for other in self._conns.values():
            if other.waiting and all(k in self.data for k in other.waiting):
                other.waiting = []
                other.outbox += b"\x00"
                self._watch(other)
