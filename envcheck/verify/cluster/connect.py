"""Reaching the cluster to verify: an address, a scheduler file, or one envcheck starts itself.

Every way in is bounded by a timeout and turns the usual failures into one-line errors:
BadInput for what the user typed, Unreachable when nothing answered in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.errors import BadInput, Unreachable
from envcheck.inputs import check_regular, load_json_file
from envcheck.report import Result, Status
from envcheck.text import first_line
from envcheck.verify.cluster.probe import PeerVersions, probe_scheduler, with_workers

if TYPE_CHECKING:
    from distributed import Client
    from distributed.security import Security

DEFAULT_TIMEOUT = 30.0

SCHEDULER_FILE_MAX_BYTES = 1 << 20  # dask writes a few hundred bytes
PEM_MAX_BYTES = 1 << 20  # a CA bundle is ~200 KiB
_SCHEMES = ("tcp", "tls", "ucx", "inproc", "ws", "wss")


def security_from_files(
    ca_file: Path | None, cert: Path | None, key: Path | None
) -> Security | None:
    """distributed's Security for a TLS cluster, or None when no TLS flag was given."""
    if ca_file is None and cert is None and key is None:
        return None
    if ca_file is None:
        raise BadInput("--tls-cert/--tls-key need --tls-ca-file (the CA that signed the cluster)")
    if (cert is None) != (key is None):
        raise BadInput("--tls-cert and --tls-key go together")
    for flag, path in (("--tls-ca-file", ca_file), ("--tls-cert", cert), ("--tls-key", key)):
        if path is not None:  # ssl reads them itself: a FIFO or /dev/zero would hang it
            check_regular(path, flag, PEM_MAX_BYTES)
    import ssl

    from distributed.security import Security

    try:  # read every PEM now: a bad one is bad input, not an unreachable scheduler later
        ctx = ssl.create_default_context(cafile=str(ca_file))
        if cert is not None and key is not None:
            ctx.load_cert_chain(str(cert), str(key))
    except (OSError, ValueError) as e:  # ssl.SSLError is an OSError; permission denied too
        used = ", ".join(str(p) for p in (ca_file, cert, key) if p is not None)
        raise BadInput(f"TLS files not usable ({used}): {e}") from None
    try:
        return Security(
            tls_ca_file=str(ca_file),
            tls_client_cert=str(cert) if cert else None,
            tls_client_key=str(key) if key else None,
            require_encryption=True,
        )
    except Exception as e:  # unreadable or malformed PEM shows up here or at connect time
        raise BadInput(f"TLS files not usable: {e}") from e


def address_from_scheduler_file(path: Path) -> str:
    """The scheduler address in a file written by `dask scheduler --scheduler-file`."""
    data = load_json_file(path, "scheduler file", SCHEDULER_FILE_MAX_BYTES)
    address = data.get("address") if isinstance(data, dict) else None
    if not isinstance(address, str) or not address:
        raise BadInput(f"{path}: not a scheduler file (no 'address')")
    return address


def check_address(address: str, security: Security | None) -> str:
    """Validate a scheduler address before any connection attempt; returns it normalised.

    Everything a user can get wrong in an address is caught here, in one line, before a
    socket or a Client exists (a Client built on a bad address leaves a noisy finaliser).
    """
    if not address.strip():
        raise BadInput("empty scheduler address (an unset variable?); give tcp://HOST:PORT")
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme == "inproc":
        raise BadInput(
            f"{address!r} is an in-process address: it exists only inside the process that "
            "made it; give the scheduler's tcp:// or tls:// address"
        )
    if scheme not in _SCHEMES:
        raise BadInput(f"unknown protocol {scheme!r} in {address!r} (use tcp://, tls://, ucx://)")
    if not rest or rest.startswith(":"):
        raise BadInput(f"no host in scheduler address {address!r}")
    if scheme in ("tcp", "tls", "ucx"):
        _check_host_port(address, rest)
    if scheme == "ucx" and importlib.util.find_spec("distributed_ucxx") is None:
        raise BadInput("a ucx:// address needs distributed-ucxx installed where envcheck runs")
    if scheme == "tls" and security is None and not _tls_configured():
        raise BadInput(
            "a tls:// address needs --tls-ca-file, --tls-cert and --tls-key "
            "(or distributed.comm.tls settings in the Dask config)"
        )
    if scheme != "tls" and security is not None:
        raise BadInput(
            f"TLS flags were given but {address!r} is not a tls:// address: "
            "use the scheduler's tls:// address, or drop the --tls-* flags"
        )
    return f"{scheme}://{rest}"


def _check_host_port(address: str, rest: str) -> None:
    from distributed.comm.addressing import parse_host_port

    try:
        host, port = parse_host_port(rest)
    except (ValueError, TypeError) as e:
        raise BadInput(f"bad scheduler address {address!r}: {e}") from None
    if not host or not 0 < int(port) < 65536:
        raise BadInput(f"bad scheduler address {address!r}: port must be 1-65535")


def _tls_configured() -> bool:
    from distributed.security import Security

    return Security().get_connection_args("client").get("ssl_context") is not None


class HandshakeSkew(Exception):
    """The scheduler answered the raw probe, but a Client of this distributed cannot talk to
    it: the versions differ too much. Carries what the probe learnt, for the skew report."""

    def __init__(self, peer: PeerVersions, reason: str) -> None:
        super().__init__(reason)
        self.peer = peer
        self.reason = reason


@contextlib.contextmanager
def connect(address: str, security: Security | None, timeout: float) -> Iterator[Client]:
    """A Client to a running scheduler, everything bounded by ``timeout``.

    First the raw probe (envcheck.verify.cluster.probe): Unreachable when nothing answers in time or
    what answers is not a scheduler. Then the Client; when it cannot connect although the
    scheduler answered and runs another distributed, HandshakeSkew.
    """
    import distributed
    from distributed import Client
    from distributed.security import Security

    started = time.monotonic()
    args = (security or Security()).get_connection_args("client")
    peer = probe_scheduler(address, args, timeout)
    remaining = max(1.0, timeout - (time.monotonic() - started))
    try:
        # set_as_default: before distributed 2022.11, wait() and libraries such as xgboost.dask
        # find "the" client only among default clients (Client.as_current is ignored there).
        with warnings.catch_warnings():
            # distributed's own skew warning (a plain table on stderr): the report says more
            warnings.simplefilter("ignore", _version_mismatch_warning())
            client = Client(address, security=security, timeout=remaining, set_as_default=True)
    except Exception as e:
        _dispose_failed_client(e)
        if peer.distributed and peer.distributed != distributed.__version__:
            left = max(1.0, timeout - (time.monotonic() - started))
            raise HandshakeSkew(with_workers(peer, args, left), first_line(e)) from None
        if isinstance(e, (OSError, TimeoutError, asyncio.TimeoutError)):
            raise Unreachable(
                f"no scheduler answered at {address} within {timeout:g} s ({first_line(e)})"
            ) from None
        raise Unreachable(f"cannot connect to {address}: {first_line(e)}") from None
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=timeout)


def _version_mismatch_warning() -> type[Warning]:
    try:
        from distributed.versions import VersionMismatchWarning
    except ImportError:  # not in every version
        return UserWarning
    return VersionMismatchWarning


def _dispose_failed_client(e: BaseException) -> None:
    """A Client whose constructor raised still exists (its frame holds it) and its finaliser
    would wait for a close that cannot finish, then print a traceback at exit. Close it here,
    briefly, and mark it closed so the finaliser has nothing left to do."""
    from distributed import Client

    tb = e.__traceback__
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        if isinstance(obj, Client):
            with contextlib.suppress(BaseException):
                obj.status = "closed"  # the finaliser and close() now return at once
            with contextlib.suppress(BaseException):
                obj._loop_runner.stop()  # the IO thread it started for this client
            return
        tb = tb.tb_next


def gpu_count() -> int:
    """GPUs NVML sees on this machine (0 without a driver), through the facts collector."""
    from envcheck.verify.facts import collect_node_facts

    return len(collect_node_facts("client").gpus)


def embedded_gpu_gap() -> tuple[str, str] | None:
    """(what, fix) when this machine's kernel driver lists GPUs that NVML cannot read (no
    pynvml, no libnvidia-ml.so, NVML failing): no worker can be pinned to a GPU. Else None."""
    from envcheck.verify.facts import collect_node_facts
    from envcheck.verify.node.checks.gpu.nvml_gap import nvml_gap

    return nvml_gap(collect_node_facts("client"))


def embedded_gap_results() -> list[Result]:
    """A failure for the embedded default on such a machine: its CPU LocalCluster checks the
    rest, but a GPU job would not get the GPUs this machine has."""
    gap = embedded_gpu_gap()
    if gap is None:
        return []
    return [
        Result(
            "embedded-cluster",
            Status.FAIL,
            "the embedded default cannot pin workers to GPUs (dask-cuda needs NVML), so it "
            f"started a CPU LocalCluster: {gap[0]}",
            fix=gap[1],
            group="cluster",
        )
    ]


def embedded_kind(gpus: int, gap: tuple[str, str] | None = None) -> tuple[str, str]:
    """("LocalCUDACluster" | "LocalCluster", why): what the embedded default starts here.
    gap: embedded_gpu_gap()'s answer when NVML sees no GPU."""
    if gpus == 0:
        if gap is not None:
            return "LocalCluster", "GPUs present but NVML cannot read them: CPU workers only"
        return "LocalCluster", "no GPU on this machine"
    if importlib.util.find_spec("dask_cuda") is None:
        return "LocalCluster", f"{gpus} GPUs but dask-cuda is not installed"
    return "LocalCUDACluster", f"one worker per GPU ({gpus})"


_PYNVML_WARNING = "ignore:The pynvml package is deprecated:FutureWarning"


def _quiet_pynvml_in_children() -> None:
    """Worker processes import distributed, which imports pynvml; the redirecting `pynvml`
    wheel then prints a FutureWarning per worker on our stderr. PYTHONWARNINGS is read at
    interpreter start, so it must be in the environment the workers inherit."""
    current = os.environ.get("PYTHONWARNINGS", "")
    if _PYNVML_WARNING not in current:
        os.environ["PYTHONWARNINGS"] = ",".join(p for p in (current, _PYNVML_WARNING) if p)


@contextlib.contextmanager
def embedded_cluster(
    protocol: str = "tcp",
    n_workers: int | None = None,
    *,
    gpus: int | None = None,
    timeout: float = 120.0,
    warm: tuple[str, ...] = (),
) -> Iterator[Client]:
    """Start a local cluster on this machine, yield a Client to it, shut both down after.

    LocalCUDACluster (one worker per GPU, or n_workers) when GPUs and dask-cuda are present,
    else a LocalCluster of worker processes (processes, not threads: a worker must be a
    separate interpreter for the checks to mean what they mean on a real cluster).
    ``warm``: modules each worker imports in the background as it starts (smoke/warm.py, as
    Dask's preload).
    """
    import dask.config
    from distributed import Client

    if gpus is None:
        gpus = gpu_count()
    kind, _ = embedded_kind(gpus)
    protocol = protocol[: -len("://")] if protocol.endswith("://") else protocol
    if protocol == "ucx" and importlib.util.find_spec("distributed_ucxx") is None:
        raise BadInput("protocol ucx needs distributed-ucxx installed")
    common = dict(
        protocol=protocol,  # "ucx", not "ucx://": dask-cuda compares the bare name
        dashboard_address=None,  # no dashboard...
        # ...but the scheduler's HTTP routes still bind: a free port, not 8787 plus a warning
        scheduler_kwargs={"dashboard_address": ":0"},
        silence_logs=logging.ERROR,
    )
    settings: dict[str, Any] = {}
    if warm:
        from envcheck.verify.smoke.warm import CONFIG_KEY, PRELOAD

        common["preload"] = [PRELOAD]
        settings[CONFIG_KEY] = list(warm)  # each nanny hands its worker the config it was made in
    _quiet_pynvml_in_children()
    try:
        with dask.config.set(settings):
            cluster = _start_local_cluster(kind, n_workers, common)
    except Exception as e:
        raise Unreachable(f"the embedded {kind} did not start: {first_line(e)}") from e
    client = None
    try:
        client = Client(cluster, timeout=timeout, set_as_default=True)  # see connect()
        yield client
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (Terminated): the run ends now
        # The worker processes got the terminal's SIGINT too and wind down on their own
        # schedule (asyncio cancels their main task; seen alive seconds later), and the
        # nannies' graceful close waits for them up to `timeout` (120 s). They are ours and
        # their work is abandoned: they go first, and the closes are short.
        kill_worker_processes(cluster)
        timeout = min(timeout, _INTERRUPTED_CLOSE)
        raise
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=timeout)
        with contextlib.suppress(Exception):
            cluster.close(timeout=timeout)


_INTERRUPTED_CLOSE = 5.0  # seconds for each close once the workers are killed


def _start_local_cluster(kind: str, n_workers: int | None, common: dict[str, Any]) -> Any:
    if kind == "LocalCUDACluster":
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(n_workers=n_workers, **common)
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, processes=True, host="127.0.0.1", **common)


def kill_worker_processes(cluster: Any) -> None:
    """SIGKILL the process of every nanny-managed worker of a local cluster."""
    for worker in list(getattr(cluster, "workers", {}).values()):
        process = getattr(getattr(worker, "process", None), "process", None)  # Nanny's
        pid = getattr(process, "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
