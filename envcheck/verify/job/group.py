"""The ranks' meeting place: a TCPStore roll call, heartbeats, a watchdog, and the gloo group.

Nothing here may wait without a limit. The store (rank 0 serves it on MASTER_ADDR:MASTER_PORT,
or torchrun's agent does) carries what must survive a broken group: who arrived, each rank's
heartbeat and the phase it reached, and rank 0's verdict. Collectives run over gloo with the
group's timeout; a watchdog thread ends the process with os._exit when a step overruns its
deadline anyway (a collective stuck in native code, a store that never answers).

Without MASTER_PORT the launch's ids give a few candidate ports (launch.derived_ports): rank 0
listens on the first one free on its host and answers every connection there with one line,
MAGIC and {"launch": this launch's identity, "store": the store's port}, and serves the store
on a port the system picks. The other ranks ask the candidates in turn until one answers as
their own launch: a port some other service holds (silent, or speaking another protocol), or
another launch's rank 0, is passed over. They never speak TCPStore's protocol to a stranger:
its client waits without end on a server that accepts and never answers (torch 2.13), and
logs c10d tracebacks on one that answers garbage.

Store keys, under envcheck-job/<run id>/:
  arrived/<r>     {"host", "pid", "local_rank"} when rank r has joined
  beat/<r>        a counter rank r's heartbeat thread increments every BEAT seconds
  phase/<p>/<r>   rank r reached phase p
  verdict         {"code", "line"}: rank 0's judgement, read by every other rank
  acked           how many ranks read the verdict (rank 0 keeps the store up until then)
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from envcheck.verify.job.launch import LaunchInfo

BEAT = 0.5  # seconds between heartbeats
STALE = 3.0  # a heartbeat that has not moved for this long: the rank is dead or stopped
ACK_WAIT = 10.0  # rank 0 waits at most this long for the others to read the verdict
MAGIC = "envcheck-job-rendezvous/1"  # the first word of rank 0's answer on a derived port
PROBE = 2.0  # seconds a rank gives one candidate port to connect and answer


class GroupError(Exception):
    """The group could not form or broke: the message names who and why."""


def _td(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=max(seconds, 0.1))


class Watchdog:
    """Ends the process (os._exit) when the current step overruns its deadline."""

    def __init__(self, on_fire: Callable[[str], None]) -> None:
        self._on_fire = on_fire
        self._lock = threading.Lock()
        self._deadline = float("inf")
        self._what = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="envcheck-watchdog", daemon=True)
        self._thread.start()

    def arm(self, seconds: float, what: str) -> None:
        with self._lock:
            self._deadline, self._what = time.monotonic() + seconds, what

    def disarm(self) -> None:
        with self._lock:
            self._deadline = float("inf")

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                late, what = time.monotonic() > self._deadline, self._what
            if late:
                try:
                    self._on_fire(what)
                finally:
                    os._exit(3)  # ExitCode.ERROR: the last resort, nothing else ran in time


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


@dataclass
class Rendezvous:
    """This rank's store connection and what rank 0 learned about the others."""

    launch: LaunchInfo
    store: Any
    prefix: str
    port: int = 0  # the store's (launch.master_port unless the port was derived)
    arrived: dict[int, dict[str, Any]] = field(default_factory=dict)
    beats: dict[int, tuple[int, float]] = field(default_factory=dict)  # r -> (count, seen at)
    _beat_stop: threading.Event = field(default_factory=threading.Event)

    def key(self, *parts: object) -> str:
        return self.prefix + "/".join(str(p) for p in parts)

    def set_json(self, key: str, value: Any) -> None:
        self.store.set(self.key(key), json.dumps(value))

    def get_json(self, key: str) -> Any:
        return json.loads(bytes(self.store.get(self.key(key))).decode())

    def has(self, *keys: str) -> bool:
        return bool(self.store.check([self.key(k) for k in keys]))

    def reached(self, phase: str) -> None:
        self.store.set(self.key("phase", phase, self.launch.rank), "1")

    def stop(self) -> None:
        self._beat_stop.set()


def connect(launch: LaunchInfo, timeout: float) -> Rendezvous:
    """This rank's store client (rank 0: the store itself, unless torchrun's agent serves it).
    A derived port: rank 0 answers on the first free candidate, the others find it there."""
    from torch.distributed import TCPStore

    if not launch.master_addr:
        raise GroupError(
            f"{launch.launcher}: ranks on several hosts and MASTER_ADDR is unset: set it to "
            "rank 0's host for every rank (mpirun -x MASTER_ADDR=HOST, or export it before "
            "horovodrun)"
        )
    prefix = f"envcheck-job/{launch.run_id or 'run'}/"
    if launch.port_candidates:
        return _connect_derived(launch, timeout, prefix)
    master = launch.rank == 0 and not launch.agent_store
    where = f"{launch.master_addr}:{launch.master_port}"
    try:
        store = TCPStore(launch.master_addr, launch.master_port, None, master, _td(timeout),
                         wait_for_workers=False)
    except Exception as e:
        if master:
            raise GroupError(f"rank 0 cannot serve the rendezvous on {where} "
                             f"({launch.port_source}): {_line(e)}") from None
        raise GroupError(f"rank {launch.rank}: rank 0's rendezvous at {where} did not answer "
                         f"within {timeout:g} s: {_line(e)}") from None
    return Rendezvous(launch, store, prefix, port=launch.master_port)


def _connect_derived(launch: LaunchInfo, timeout: float, prefix: str) -> Rendezvous:
    """connect() on derived candidate ports: rank 0 answers on one, the store is elsewhere."""
    from torch.distributed import TCPStore

    deadline = time.monotonic() + timeout
    stop = threading.Event()
    if launch.rank == 0:
        sock, port = _listen_candidate(launch)
        try:
            store = TCPStore(launch.master_addr, 0, None, True, _td(timeout),
                             wait_for_workers=False)
        except Exception as e:
            sock.close()
            raise GroupError(f"rank 0 cannot serve the rendezvous store on "
                             f"{launch.master_addr}: {_line(e)}") from None
        store_port = int(store.port)
        hello = json.dumps({"launch": _identity(launch), "store": store_port})
        threading.Thread(target=_answer, args=(sock, f"{MAGIC} {hello}\n".encode(), stop),
                         name="envcheck-rendezvous", daemon=True).start()
    else:
        port, store_port = _find_rank0(launch, timeout, deadline)
        try:
            store = TCPStore(launch.master_addr, store_port, None, False,
                             _td(deadline - time.monotonic()), wait_for_workers=False)
        except Exception as e:
            raise GroupError(f"rank {launch.rank}: rank 0's store at {launch.master_addr}:"
                             f"{store_port} (announced on port {port}) did not answer: "
                             f"{_line(e)}") from None
    n = launch.port_candidates.index(port) + 1
    source = (f"{launch.port_source}; candidate {n} of {len(launch.port_candidates)}, "
              f"store on port {store_port}")
    chosen = dataclasses.replace(launch, master_port=port, port_source=source)
    return Rendezvous(chosen, store, prefix, port=store_port, _beat_stop=stop)


def _identity(launch: LaunchInfo) -> str:
    """What tells this launch's rank 0 from any other's: every rank computes it alike."""
    ports = ",".join(str(p) for p in launch.port_candidates)
    return f"{launch.launcher}/{launch.run_id}/{launch.world_size}/{ports}"


def _listen(port: int) -> socket.socket:
    """A socket listening on `port` of every local address (IPv6 too where the host has it);
    OSError (errno EADDRINUSE) when something listens there already."""
    if socket.has_dualstack_ipv6():
        try:
            return socket.create_server(("", port), family=socket.AF_INET6, backlog=128,
                                        dualstack_ipv6=True)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise
    return socket.create_server(("", port), backlog=128)


def _listen_candidate(launch: LaunchInfo) -> tuple[socket.socket, int]:
    """Rank 0: the first candidate port free on this host, listening; GroupError naming them
    all when every one is in use."""
    for port in launch.port_candidates:
        try:
            return _listen(port), port
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise GroupError(f"rank 0 cannot serve the rendezvous on {launch.master_addr}:"
                                 f"{port} ({launch.port_source}): {_line(e)}") from None
    ports = ", ".join(str(p) for p in launch.port_candidates)
    raise GroupError(f"rank 0 cannot serve the rendezvous on {launch.master_addr}: ports "
                     f"{ports} ({launch.port_source}) are all in use: set MASTER_PORT to a "
                     "free port for every rank")


def _answer(sock: socket.socket, line: bytes, stop: threading.Event) -> None:
    """Rank 0: tell whoever connects to the candidate port who this is and where the store
    is, until the rendezvous stops."""
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


def _find_rank0(launch: LaunchInfo, timeout: float, deadline: float) -> tuple[int, int]:
    """A rank other than 0: (the candidate where this launch's rank 0 answers, its store's
    port), asking every candidate in turn until `deadline` (rank 0 may start late)."""
    want = _identity(launch)
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
            got = _ask(launch.master_addr, port, min(PROBE, left), want)
            if isinstance(got, int):
                return port, got
            seen[port] = got
        time.sleep(max(min(0.1, deadline - time.monotonic()), 0))


def _ask(host: str, port: int, limit: float, want: str) -> int | str:
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
        return _line(e)
    magic, _, body = data.decode("utf-8", "replace").strip().partition(" ")
    try:
        hello = json.loads(body) if magic == MAGIC else None
        who, store = str(hello["launch"]), int(hello["store"])  # type: ignore[index]
    except (ValueError, KeyError, TypeError):
        return "not an envcheck rendezvous"
    if who != want:
        return f"another launch's rendezvous ({who})"
    return store if 0 < store < 65536 else "not an envcheck rendezvous"


def _line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def arrive(rv: Rendezvous) -> None:
    """Answer the roll call, and start this rank's heartbeat (its own store connection)."""
    launch = rv.launch
    rv.set_json(f"arrived/{launch.rank}", {
        "host": socket.gethostname(), "pid": os.getpid(), "local_rank": launch.local_rank,
    })
    if launch.rank != 0:
        threading.Thread(target=_beat, args=(rv,), name="envcheck-heartbeat",
                         daemon=True).start()


def _beat(rv: Rendezvous) -> None:
    from torch.distributed import TCPStore

    try:
        own = TCPStore(rv.launch.master_addr, rv.port, None, False, _td(5.0),
                       wait_for_workers=False)
    except Exception:
        return  # the main connection will find the store gone soon enough
    key = rv.key("beat", rv.launch.rank)
    while not rv._beat_stop.wait(BEAT):
        try:
            own.add(key, 1)
        except Exception:
            return


def roll_call(rv: Rendezvous, timeout: float) -> list[int]:
    """Rank 0: wait until every rank arrived or `timeout`; the ranks missing (sorted)."""
    world = rv.launch.world_size
    deadline = time.monotonic() + timeout
    missing = list(range(world))
    while True:
        missing = [r for r in missing if not rv.has(f"arrived/{r}")]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for r in range(world):
        if r not in missing:
            rv.arrived[r] = rv.get_json(f"arrived/{r}")
    return missing


def watch_beats(rv: Rendezvous) -> None:
    """Rank 0: note when each rank's heartbeat last moved (rank 0's clock), every BEAT, over
    a connection of its own (the main thread may be inside a store call)."""
    from torch.distributed import TCPStore

    own = TCPStore(rv.launch.master_addr, rv.port, None, False, _td(5.0),
                   wait_for_workers=False)
    start = time.monotonic()
    rv.beats.update({r: (0, start) for r in rv.arrived if r != 0})

    def run() -> None:
        while not rv._beat_stop.wait(BEAT):
            now = time.monotonic()
            for r, (count, _) in list(rv.beats.items()):
                try:
                    got = int(own.add(rv.key("beat", r), 0))
                except Exception:
                    return
                if got != count:
                    rv.beats[r] = (got, now)

    threading.Thread(target=run, daemon=True, name="envcheck-beats").start()


def silent_ranks(rv: Rendezvous) -> list[int]:
    """Ranks that arrived but whose heartbeat has not moved for STALE seconds."""
    now = time.monotonic()
    return sorted(r for r, (_, seen) in rv.beats.items() if now - seen > STALE)


def not_reached(rv: Rendezvous, phase: str) -> list[int]:
    """Ranks that arrived but never said they reached `phase`."""
    return [r for r in sorted(rv.arrived) if not rv.has(f"phase/{phase}/{r}")]


def describe(rv: Rendezvous, rank: int) -> str:
    """'rank 3 (host gpu12, pid 4242)', or the launcher's host for a rank that never came."""
    seen = rv.arrived.get(rank)
    if seen:
        return f"rank {rank} (host {seen['host']}, pid {seen['pid']})"
    host = rv.launch.host_of(rank) or _host_by_neighbours(rv, rank)
    return f"rank {rank} (host {host})" if host else f"rank {rank} (host unknown)"


def _host_by_neighbours(rv: Rendezvous, rank: int) -> str:
    """Block placement (torchrun, horovodrun, mpirun's default): ranks base..base+L-1 share a
    host, where base = rank - local_rank of any rank that arrived from it."""
    size = rv.launch.local_world_size
    if size <= 0:
        return ""
    for r, seen in rv.arrived.items():
        base = r - int(seen.get("local_rank", 0))
        if base <= rank < base + size:
            return str(seen["host"])
    return ""


def init_group(rv: Rendezvous, timeout: float) -> Any:
    """The gloo process group over the store (every collective bounded by `timeout`)."""
    import torch.distributed as dist

    launch = rv.launch
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        # gloo binds to what the hostname resolves to (127.0.0.1 on many machines): a group
        # across hosts then hangs. Name the interface this rank reaches rank 0 through.
        from envcheck.verify.facts import interface_holding

        ip = route_ip(launch.master_addr)
        with contextlib.suppress(Exception):
            name = interface_holding(ip) if ip else ""
            if name and name != "lo" or launch.local_world_size == launch.world_size:
                os.environ["GLOO_SOCKET_IFNAME"] = name or "lo"
    store = dist.PrefixStore(rv.key("pg") + "/", rv.store)
    dist.init_process_group("gloo", store=store, rank=launch.rank,
                            world_size=launch.world_size, timeout=_td(timeout))
    return dist


def publish_verdict(rv: Rendezvous, code: int, line: str) -> None:
    rv.set_json("verdict", {"code": int(code), "line": line})


def await_verdict(rv: Rendezvous, timeout: float) -> tuple[int, str]:
    """A rank other than 0: rank 0's (code, line), then acknowledge it."""
    deadline = time.monotonic() + timeout
    while not rv.has("verdict"):
        if time.monotonic() > deadline:
            raise GroupError(f"rank 0 ({rv.launch.master_addr}) gave no verdict within "
                             f"{timeout:g} s")
        time.sleep(0.05)
    got = rv.get_json("verdict")
    with contextlib.suppress(Exception):
        rv.store.add(rv.key("acked"), 1)
    return int(got["code"]), str(got["line"])


def await_acks(rv: Rendezvous, expected: int) -> None:
    """Rank 0: keep serving the store until `expected` ranks read the verdict (bounded)."""
    deadline = time.monotonic() + ACK_WAIT
    while time.monotonic() < deadline:
        try:
            if int(rv.store.add(rv.key("acked"), 0)) >= expected:
                return
        except Exception:
            return
        time.sleep(0.05)


def debug_line(launch: LaunchInfo, text: str) -> None:
    print(f"envcheck verify job: rank {launch.rank}/{launch.world_size}: {text}",
          file=sys.stderr, flush=True)
