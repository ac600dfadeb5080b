"""The rendezvous's sockets: the store bound to MASTER_ADDR, and the derived-port announcement.

Rank 0 serves the store (store.py: TCPStore's protocol, every byte bounded) on a socket bound
to the address the launcher gives (MASTER_ADDR, or the Slurm step's first node): never on
every interface.

Without MASTER_PORT the launch's ids give a few candidate ports (launch.derived_ports): rank 0
listens on the first one free on its host and answers every connection there with one line,
MAGIC and {"launch": this launch's identity, "store": the store's port}, and serves the store
on a port the system picks. The other ranks ask the candidates in turn until one answers as
their own launch: a port some other service holds (silent, or speaking another protocol), or
another launch's rank 0, is passed over. They never speak TCPStore's protocol to a stranger:
its client waits without end on a server that accepts and never answers (torch 2.13), and
logs c10d tracebacks on one that answers garbage.

The announcement is signed with the job's key (auth.py): a rank takes no store port from a
process that cannot sign it.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import ipaddress
import os
import socket
import threading
import time
from typing import Any

from envcheck.verify.job import auth, store
from envcheck.verify.job.launch import LaunchInfo

MAGIC = "envcheck-job-rendezvous/1"  # the first word of rank 0's answer on a derived port
PROBE = 2.0  # seconds a rank gives one candidate port to connect and answer


class GroupError(Exception):
    """The group could not form or broke: the message names who and why."""


def td(seconds: float) -> datetime.timedelta:
    """A timedelta for torch.distributed (at least 0.1 s)."""
    return datetime.timedelta(seconds=max(seconds, 0.1))


def secret_name(launch: LaunchInfo) -> str:
    where = ",".join(str(p) for p in launch.port_candidates) or str(launch.master_port)
    return f"{launch.launcher}/{launch.run_id}/{launch.master_addr}/{where}"


def serve(addr: str, port: int, timeout: float, world: int) -> tuple[Any, Any]:
    """Rank 0: (a TCPStore client of the store, the store): envcheck's bounded store
    (store.py) on a socket bound to `addr` (not every interface); OSError as bind raised it,
    RuntimeError from TCPStore."""
    from torch.distributed import TCPStore

    server = store.BoundedStore(listen(addr, port), store.Limits.for_world(world))
    try:
        client = TCPStore(addr, server.port, None, False, td(timeout), wait_for_workers=False)
    except Exception:
        server.close()
        raise
    return client, server


def identity(launch: LaunchInfo) -> str:
    """What tells this launch's rank 0 from any other's: every rank computes it alike."""
    ports = ",".join(str(p) for p in launch.port_candidates)
    return f"{launch.launcher}/{launch.run_id}/{launch.world_size}/{ports}"


def route_ip(host: str) -> str:
    """The local IP this process would reach `host` from ("" when there is no route)."""
    try:
        infos = socket.getaddrinfo(host, 9, proto=socket.IPPROTO_UDP)
    except OSError:
        return ""
    for family, _, _, _, addr in infos:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect(addr)  # UDP: no packet is sent, only the route is chosen
                return str(s.getsockname()[0])
        except OSError:
            continue
    return ""


def bind_address(launch: LaunchInfo) -> str:
    """The address rank 0 listens on: MASTER_ADDR's. Where that resolves to loopback only
    (a hostname /etc/hosts maps to 127.0.1.1) while ranks run on other hosts, the address this
    host reaches the step's other nodes from instead: the one they reach it by."""
    try:
        infos = socket.getaddrinfo(launch.master_addr, None, type=socket.SOCK_STREAM)
    except OSError:
        return launch.master_addr  # the bind fails and names it
    ips = [str(info[4][0]).split("%")[0] for info in infos]
    if not ips or not all(ipaddress.ip_address(ip).is_loopback for ip in ips):
        return launch.master_addr
    if launch.local_world_size == launch.world_size:  # every rank on this host
        return launch.master_addr
    for host in launch.hosts[1:]:
        ip = route_ip(host)
        if ip and not ipaddress.ip_address(ip.split("%")[0]).is_loopback:
            return ip
    return launch.master_addr


def listen(addr: str, port: int) -> socket.socket:
    """A socket listening on `port` of `addr` only (the launcher's MASTER_ADDR, resolved);
    OSError (errno EADDRINUSE) when something listens there already."""
    infos = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    last: OSError = OSError(errno.EADDRNOTAVAIL, f"{addr} resolves to no address")
    for family, _, _, _, sockaddr in infos:
        try:
            return socket.create_server(sockaddr[:2], family=family, backlog=128)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise
            last = e
    raise last


def listen_candidate(launch: LaunchInfo) -> tuple[socket.socket, int]:
    """Rank 0: the first candidate port free on this host, listening; GroupError naming them
    all when every one is in use."""
    for port in launch.port_candidates:
        try:
            return listen(bind_address(launch), port), port
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise GroupError(f"rank 0 cannot serve the rendezvous on {launch.master_addr}:"
                                 f"{port} ({launch.port_source}): {line(e)}") from None
    ports = ", ".join(str(p) for p in launch.port_candidates)
    raise GroupError(f"rank 0 cannot serve the rendezvous on {launch.master_addr}: ports "
                     f"{ports} ({launch.port_source}) are all in use: set MASTER_PORT to a "
                     "free port for every rank")


def answer(sock: socket.socket, line: bytes, stop: threading.Event) -> None:
    """Rank 0: tell whoever connects to the candidate port who this is and where the store
    is (signed: only the launch's ranks can check it), until the rendezvous stops."""
    sock.settimeout(0.2)
    with sock:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn, contextlib.suppress(OSError):
                conn.settimeout(1.0)
                conn.sendall(line)


def find_rank0(launch: LaunchInfo, timeout: float, deadline: float,
                secret: auth.Secret) -> tuple[int, int, auth.Secret]:
    """A rank other than 0: (the candidate where this launch's rank 0 answers, its store's
    port, the secret that verified it), asking every candidate in turn until `deadline` (rank
    0 may start late, or replace an old secret file)."""
    want = identity(launch)
    seen: dict[int, str] = {}
    while True:
        for port in launch.port_candidates:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "; ".join(f"{p}: {w}" for p, w in seen.items())
                ports = ", ".join(str(p) for p in launch.port_candidates)
                raise GroupError(f"rank {launch.rank}: rank 0's rendezvous at "
                                 f"{launch.master_addr} did not answer within {timeout:g} s on "
                                 f"any of ports {ports} ({launch.port_source}): {why}")
            got = ask(launch.master_addr, port, min(PROBE, left), want,
                      announce_binding(launch, secret, port))
            if isinstance(got, int):
                return port, got, secret
            seen[port] = got
        if secret.source != auth.SECRET_ENV:
            secret = auth.read_file(os.environ, secret_name(launch)) or secret
        time.sleep(max(min(0.1, deadline - time.monotonic()), 0))


def announce_binding(launch: LaunchInfo, secret: auth.Secret, port: int) -> auth.Binding:
    """What rank 0's announcement on candidate `port` is bound to (no nonce: it comes before
    any; the hello in the store carries rank 0's)."""
    return auth.Binding(secret.key, launch.run_id, f"{launch.master_addr}:{port}",
                        launch.world_size)


def ask(host: str, port: int, limit: float, want: str,
        binding: auth.Binding) -> int | str:
    """The store port rank 0 of launch `want` announces on host:port, or why not (a phrase)."""
    end = time.monotonic() + limit
    data = b""
    try:
        with socket.create_connection((host, port), timeout=limit) as s:
            while not data.endswith(b"\n") and len(data) < 4096:
                s.settimeout(max(end - time.monotonic(), 0.01))
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    except ConnectionRefusedError:
        return "refused"
    except socket.timeout:
        return "no answer" if not data else "not an envcheck rendezvous"
    except OSError as e:
        return line(e)
    magic, _, body = data.strip().partition(b" ")
    if magic != MAGIC.encode():
        return "not an envcheck rendezvous"
    try:
        hello = auth.loads(body.partition(b" ")[2])
        who, store = str(hello["launch"]), int(hello["store"])
    except (auth.AuthError, ValueError, KeyError, TypeError):
        return "not an envcheck rendezvous"
    if who != want:
        return f"another launch's rendezvous ({who[:200]!r})"
    try:
        binding.verify(0, "announce", body, 4096)
    except auth.AuthError:
        return "a rendezvous not signed with this job's secret"
    return store if 0 < store < 65536 else "not an envcheck rendezvous"


def line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]
