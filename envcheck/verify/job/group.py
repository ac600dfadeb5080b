"""The ranks' meeting place: a TCPStore roll call, heartbeats, a watchdog, and the gloo group.

Nothing here may wait without a limit. The store (rank 0 serves it on MASTER_ADDR:MASTER_PORT,
or torchrun's agent does) carries what must survive a broken group: who arrived, each rank's
heartbeat and the phase it reached, and rank 0's verdict. Collectives run over gloo with the
group's timeout; a watchdog thread ends the process with os._exit when a step overruns its
deadline anyway (a collective stuck in native code, a store that never answers).

Without MASTER_PORT, rank 0 announces the store on a port derived from the launch's ids
(listen.py).

The store listens on MASTER_ADDR's address only (store.py, on a socket bound there), never on
every interface. Every value set in it is signed (auth.Binding): '<HMAC> <json>' under a key
only the launch's processes can derive, over the launch (its nonce, run id, MASTER_ADDR:PORT,
world size), the sender rank, the key's name and the JSON. A rank acts on no value it cannot
verify; a value that fails is named as unauthenticated. The derived port's announcement is
signed alike.

Store keys, under envcheck-job/<run id>/ (signed JSON unless said otherwise):
  hello           {"world", "host", "pid", "nonce"}: rank 0 is up, and its fresh nonce for
                  this launch; the others check its signature and WORLD_SIZE against their own
  arrived/<r>     {"host", "pid", "local_rank", "world", "nonce"} when rank r has joined, with
                  its own fresh nonce, signed under rank 0's; set only where unset
                  (compare_set): a second claimant of r finds it taken
  dup/<r>         a second claimant of rank r: {"host", "pid"}
  stranger        a rank whose WORLD_SIZE differs from rank 0's: {"rank", "world", "host", "pid"}
  beat/<r>        a counter rank r's heartbeat thread increments every BEAT seconds (unsigned:
                  store.add; only ever used to name a rank as silent)
  phase/<p>/<r>   rank r reached phase p
  roll, verdict, acked: roll.py
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from envcheck.text import for_terminal
from envcheck.verify.job import auth, listen, store
from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.listen import GroupError, route_ip
from envcheck.verify.job.listen import td as _td

BEAT = 0.5  # seconds between heartbeats
STALE = 3.0  # a heartbeat that has not moved for this long: the rank is dead or stopped
NOTHING = "nothing was written"  # why Rendezvous.wait_signed found no value
OWN_STORE_TIMEOUT = 5.0  # the heartbeat threads' own store connections
JOIN = BEAT + OWN_STORE_TIMEOUT + 1.0  # the longest a heartbeat thread takes to see stop()


@dataclass
class Rendezvous:
    """This rank's store connection and what rank 0 learned about the others."""

    launch: LaunchInfo
    store: Any
    prefix: str
    port: int = 0  # the store's (launch.master_port unless the port was derived)
    secret: auth.Secret | None = None  # what signs and verifies every value
    nonce: str = field(default_factory=auth.fresh_nonce)  # this rank's, for this launch
    rank0_nonce: str = ""  # from rank 0's hello (rank 0: its own nonce)
    session: str = ""  # auth.session_nonce once the roll call is verified
    arrived: dict[int, dict[str, Any]] = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)  # rank -> why it was not admitted
    beats: dict[int, tuple[int, float]] = field(default_factory=dict)  # r -> (count, seen at)
    _beat_stop: threading.Event = field(default_factory=threading.Event)
    _keep: list[Any] = field(default_factory=list)  # rank 0: its store (store.BoundedStore)
    _threads: list[threading.Thread] = field(default_factory=list)  # that call into torch

    def start(self, target: Any, name: str) -> None:
        """A thread of this rendezvous that calls into torch's store: stop() joins it."""
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    @property
    def binding(self) -> auth.Binding:
        """What this rank signs and verifies with now: the launch's facts and its nonce
        (rank 0's until the roll call, the session's after it)."""
        assert self.secret is not None
        return auth.Binding(self.secret.key, self.launch.run_id,
                            f"{self.launch.master_addr}:{self.port}", self.launch.world_size,
                            self.session or self.rank0_nonce)

    @property
    def early(self) -> auth.Binding:
        """The binding of what ranks write before the roll call (rank 0's nonce): arrivals,
        second claimants, a WORLD_SIZE that differs."""
        return dataclasses.replace(self.binding, nonce=self.rank0_nonce)

    def key(self, *parts: object) -> str:
        return self.prefix + "/".join(str(p) for p in parts)

    def set_json(self, key: str, value: Any) -> None:
        """`value` at `key`, signed as this rank's message in phase `key` of this launch."""
        self.store.set(self.key(key), self.binding.sign(self.launch.rank, key, value))

    def get_json(self, key: str, sender: int) -> Any:
        """The value at `key`, verified as `sender`'s in phase `key` of this launch;
        auth.AuthError when it is not."""
        return self.binding.verify(sender, key, self.store.get(self.key(key)))

    def has(self, *keys: str) -> bool:
        return bool(self.store.check([self.key(k) for k in keys]))

    def wait_signed(self, key: str, sender: int, deadline: float,
                    check: Any = None) -> tuple[Any, str]:
        """(the verified value at `key`, "") once one is there (and `check(value)` says ""
        of it); (None, why) at `deadline`: a value that fails is never returned, only named."""
        why = NOTHING
        while True:
            try:
                if self.has(key):
                    got = self.get_json(key, sender)
                    why = check(got) if check is not None else ""
                    if not why:
                        return got, ""
            except auth.AuthError as e:
                why = f"a value that is not this launch's was refused ({e})"
            except Exception as e:  # the store went away: say what was seen before
                return None, f"{why}; then the store stopped answering ({listen.line(e)})"
            if time.monotonic() > deadline:
                return None, why
            time.sleep(0.05)

    def reached(self, phase: str) -> None:
        self.set_json(f"phase/{phase}/{self.launch.rank}", 1)

    def stop(self) -> None:
        """Stop and join this rank's store threads, then close what rank 0 serves.

        Joined, not left to the interpreter's exit: a daemon thread inside a torch store call
        when Python finalizes is ended by pthread_exit, whose unwinding through pybind11's
        noexcept GIL guard calls std::terminate ("terminate called without an active
        exception", exit 134) after a verdict that passed."""
        self._beat_stop.set()
        for thread in self._threads:
            thread.join(JOIN)
        for kept in self._keep:
            with contextlib.suppress(Exception):
                kept.close()
        if self.launch.rank == 0 and self.secret is not None:
            auth.remove_file(self.secret)


def connect(launch: LaunchInfo, timeout: float) -> Rendezvous:
    """This rank's store client (rank 0: the store itself, unless torchrun's agent serves it),
    authenticated: rank 0 signs `hello`, the others check it with their secret.
    A derived port: rank 0 answers on the first free candidate, the others find it there."""
    if not launch.master_addr:
        raise GroupError(
            f"{launch.launcher}: ranks on several hosts and MASTER_ADDR is unset: set it to "
            "rank 0's host for every rank (mpirun -x MASTER_ADDR=HOST, or export it before "
            "horovodrun)"
        )
    deadline = time.monotonic() + timeout
    prefix = f"envcheck-job/{launch.run_id or 'run'}/"
    try:
        secret = _first_secret(launch, deadline)
        rv = (_connect_derived(launch, timeout, prefix, secret) if launch.port_candidates
              else _connect_given(launch, timeout, prefix, secret))
    except auth.AuthError as e:
        raise GroupError(f"rank {launch.rank}: {e}") from None
    if launch.rank == 0:
        rv.rank0_nonce = rv.nonce  # drawn for this launch: the hello announces it
        hello = {"world": launch.world_size, "host": socket.gethostname(), "pid": os.getpid(),
                 "nonce": rv.nonce}
        rv.store.set(rv.key("hello"), dataclasses.replace(rv.binding, nonce="").sign(
            0, "hello", hello))
        return rv
    _check_hello(rv, deadline, timeout)
    return rv


def read_hello(rv: Rendezvous) -> dict[str, Any]:
    """Rank 0's hello, verified as rank 0's for the world size it states (a rank of another
    size then names both); AuthError when it is not signed for this rendezvous."""
    tag, body = auth.split(rv.store.get(rv.key("hello")))
    world = auth.loads(body).get("world") if body.startswith(b"{") else None
    if type(world) is not int:
        raise auth.AuthError("a hello without a world size")
    binding = dataclasses.replace(rv.binding, world=world, nonce="")
    hello = binding.verify(0, "hello", tag + b" " + body)
    nonce = hello.get("nonce")
    if not (isinstance(nonce, str) and len(nonce) == 2 * auth.NONCE_BYTES
            and all(c in "0123456789abcdef" for c in nonce)):
        raise auth.AuthError("a hello without rank 0's nonce")
    return hello


def _first_secret(launch: LaunchInfo, deadline: float) -> auth.Secret:
    """ENVCHECK_JOB_SECRET, else rank 0 writes the secret file and the others read it."""
    got = auth.from_env(os.environ)
    if got is not None:
        return got
    if launch.rank == 0:
        return auth.create_file(os.environ, listen.secret_name(launch))
    return auth.wait_file(os.environ, listen.secret_name(launch), deadline)


def _check_hello(rv: Rendezvous, deadline: float, timeout: float) -> None:
    """A rank other than 0: rank 0's signed hello (re-reading a secret file rank 0 may have
    replaced since), and the same WORLD_SIZE; GroupError naming what differs."""
    launch = rv.launch
    while True:
        hello, why = _wait_hello(rv, min(deadline, time.monotonic() + 0.5))
        if hello is not None:
            break
        if rv.secret is not None and rv.secret.source != auth.SECRET_ENV:
            fresh = auth.read_file(os.environ, listen.secret_name(launch))
            rv.secret = fresh or rv.secret
        if time.monotonic() > deadline:
            raise GroupError(f"rank {launch.rank}: the rendezvous at {launch.master_addr}:"
                             f"{rv.port} is not this job's (no hello signed with its secret "
                             f"within {timeout:g} s: {why}); every rank needs the same "
                             f"{auth.SECRET_ENV}")
    rv.rank0_nonce, world = hello["nonce"], hello["world"]
    if world != launch.world_size:
        stranger = {"rank": launch.rank, "world": launch.world_size,
                    "host": socket.gethostname(), "pid": os.getpid()}
        with contextlib.suppress(Exception):  # signed for rank 0's world: it can verify it
            rv.store.set(rv.key("stranger"), dataclasses.replace(rv.binding, world=world).sign(
                launch.rank, "stranger", stranger))
        raise GroupError(f"rank {launch.rank}: WORLD_SIZE differs between ranks: "
                         f"{launch.world_size} here ({launch.launcher}), {world!r} on rank 0")


def _wait_hello(rv: Rendezvous, deadline: float) -> tuple[dict[str, Any] | None, str]:
    """(rank 0's verified hello, "") once there; (None, why) at `deadline`."""
    why = "nothing was written"
    while True:
        try:
            if rv.has("hello"):
                return read_hello(rv), ""
        except (auth.AuthError, AttributeError) as e:
            why = f"a value that is not this launch's was refused ({e})"
        except Exception as e:
            return None, f"{why}; then the store stopped answering ({listen.line(e)})"
        if time.monotonic() > deadline:
            return None, why
        time.sleep(0.05)


def _connect_given(launch: LaunchInfo, timeout: float, prefix: str,
                   secret: auth.Secret) -> Rendezvous:
    from torch.distributed import TCPStore

    master = launch.rank == 0 and not launch.agent_store
    where = f"{launch.master_addr}:{launch.master_port}"
    keep: list[Any] = []
    try:
        if master:
            store, sock = listen.serve(listen.bind_address(launch), launch.master_port, timeout,
                                       launch.world_size)
            keep.append(sock)
        else:
            store = TCPStore(launch.master_addr, launch.master_port, None, False,
                             _td(timeout), wait_for_workers=False)
    except Exception as e:
        if master:
            raise GroupError(f"rank 0 cannot serve the rendezvous on {where} "
                             f"({launch.port_source}): {listen.line(e)}") from None
        raise GroupError(f"rank {launch.rank}: rank 0's rendezvous at {where} did not answer "
                         f"within {timeout:g} s: {listen.line(e)}") from None
    return Rendezvous(launch, store, prefix, port=launch.master_port, secret=secret, _keep=keep)


def _connect_derived(launch: LaunchInfo, timeout: float, prefix: str,
                     secret: auth.Secret) -> Rendezvous:
    """connect() on derived candidate ports: rank 0 answers on one, the store is elsewhere."""
    from torch.distributed import TCPStore

    deadline = time.monotonic() + timeout
    stop = threading.Event()
    keep: list[Any] = []
    if launch.rank == 0:
        sock, port = listen.listen_candidate(launch)
        try:
            store, store_sock = listen.serve(listen.bind_address(launch), 0, timeout,
                                             launch.world_size)
        except Exception as e:
            sock.close()
            raise GroupError(f"rank 0 cannot serve the rendezvous store on "
                             f"{launch.master_addr}: {listen.line(e)}") from None
        keep.append(store_sock)
        store_port = int(store.port)
        hello = listen.announce_binding(launch, secret, port).sign(
            0, "announce", {"launch": listen.identity(launch), "store": store_port})
        line = f"{listen.MAGIC} {hello}\n".encode()
        threading.Thread(target=listen.answer, args=(sock, line, stop),
                         name="envcheck-rendezvous", daemon=True).start()
    else:
        port, store_port, secret = listen.find_rank0(launch, timeout, deadline, secret)
        try:
            store = TCPStore(launch.master_addr, store_port, None, False,
                             _td(deadline - time.monotonic()), wait_for_workers=False)
        except Exception as e:
            raise GroupError(f"rank {launch.rank}: rank 0's store at {launch.master_addr}:"
                             f"{store_port} (announced on port {port}) did not answer: "
                             f"{listen.line(e)}") from None
    n = launch.port_candidates.index(port) + 1
    source = (f"{launch.port_source}; candidate {n} of {len(launch.port_candidates)}, "
              f"store on port {store_port}")
    chosen = dataclasses.replace(launch, master_port=port, port_source=source)
    return Rendezvous(chosen, store, prefix, port=store_port, secret=secret, _beat_stop=stop,
                      _keep=keep)


def arrive(rv: Rendezvous) -> None:
    """Answer the roll call (claiming this rank where nobody holds it yet), and start this
    rank's heartbeat (its own store connection). GroupError when the rank is taken."""
    launch = rv.launch
    me = {"host": socket.gethostname(), "pid": os.getpid(), "local_rank": launch.local_rank,
          "world": launch.world_size, "nonce": rv.nonce}
    phase = f"arrived/{launch.rank}"
    signed = rv.binding.sign(launch.rank, phase, me)
    held = bytes(rv.store.compare_set(rv.key(phase), "", signed)).decode("utf-8", "replace")
    if held != signed:
        try:
            other = rv.binding.verify(launch.rank, phase, held)
        except auth.AuthError:
            raise GroupError(f"rank {launch.rank} is claimed by a process without this job's "
                             "secret (unauthenticated): another process took its place in the "
                             "rendezvous") from None
        with contextlib.suppress(Exception):
            rv.set_json(f"dup/{launch.rank}", {"host": me["host"], "pid": me["pid"]})
        raise GroupError(f"rank {launch.rank} is claimed twice: by {_who(other)} and by this "
                         f"process (host {me['host']}, pid {me['pid']})")
    if launch.rank != 0:
        rv.start(lambda: _beat(rv), "envcheck-heartbeat")


def _who(seen: Any) -> str:
    """'host gpu3, pid 42' from a verified arrival (or dup) record."""
    if not isinstance(seen, dict):
        return "a process"
    return f"host {_text(seen.get('host'))}, pid {_text(seen.get('pid'))}"


def _text(value: Any, limit: int = 100) -> str:
    """A value another rank sent, as a short printable word."""
    text = str(value)
    return text if len(text) <= limit and text.isprintable() else repr(text[:limit])


def _beat(rv: Rendezvous) -> None:
    from torch.distributed import TCPStore

    try:
        own = TCPStore(rv.launch.master_addr, rv.port, None, False, _td(OWN_STORE_TIMEOUT),
                       wait_for_workers=False)
    except Exception:
        return  # the main connection will find the store gone soon enough
    key = rv.key("beat", rv.launch.rank)
    while not rv._beat_stop.wait(BEAT):
        try:
            own.add(key, 1)
        except Exception:
            return


def watch_beats(rv: Rendezvous) -> None:
    """Rank 0: note when each rank's heartbeat last moved (rank 0's clock), every BEAT, over
    a connection of its own (the main thread may be inside a store call)."""
    from torch.distributed import TCPStore

    own = TCPStore(rv.launch.master_addr, rv.port, None, False, _td(OWN_STORE_TIMEOUT),
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

    rv.start(run, "envcheck-beats")


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


def store_refusals(rv: Rendezvous) -> str:
    """Rank 0: the connections its store closed for breaking TCPStore's protocol or a limit,
    as a sentence ("" when none)."""
    served = [k for k in rv._keep if isinstance(k, store.BoundedStore)]
    if not served or not served[0].closed:
        return ""
    s = served[0]
    return (f"the rendezvous store closed {s.closed} connection(s) that broke its protocol or "
            f"its limits: " + "; ".join(s.refused[:4]))


def debug_line(launch: LaunchInfo, text: str) -> None:
    print(f"envcheck verify job: rank {launch.rank}/{launch.world_size}: {for_terminal(text)}",
          file=sys.stderr, flush=True)
