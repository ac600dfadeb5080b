"""Ask a scheduler who it is and what it runs, over a raw comm, before any Client exists.

A Client speaks its own version of the scheduler protocol (``identity(n_workers=...)`` from
distributed 2025 on, stream handshakes, ...): a client whose distributed differs enough from
the cluster's cannot even connect, and that is exactly the skew envcheck exists to report. The
messages sent here are the oldest and plainest the scheduler has answered for years (ops
``identity``, ``versions`` and ``broadcast`` of ``versions``, all present in distributed
2022.7 and today's), so both ends speak them whatever their versions. The same round trip
tells a Dask scheduler from an HTTP server or a port that answers garbage or nothing.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Dict

from envcheck.errors import Unreachable
from envcheck.text import first_line
from envcheck.verify.across.skew import TRACKED
from envcheck.verify.facts import NodeFacts

# Beyond what get_versions always reports: the rest of the skew table's rows (an absent one
# comes back as None: "not importable there").
ASKED = tuple(n for n in TRACKED if n not in ("python", "dask", "distributed", "msgpack",
              "cloudpickle", "tornado", "toolz", "numpy", "pandas", "lz4"))

# distributed.versions.get_versions()'s shape: {"host": {"python": ...}, "packages": {...}}
Versions = Dict[str, Any]


@dataclass(frozen=True)
class PeerVersions:
    """What the scheduler said about itself and its workers (those that answered)."""

    address: str
    scheduler: Versions
    workers: dict[str, Versions] = field(default_factory=dict)  # worker address -> versions
    seconds: float = 0.0

    @property
    def distributed(self) -> str:
        return package_version(self.scheduler, "distributed")

    @property
    def python(self) -> str:
        return python_version(self.scheduler)


def package_version(versions: Versions, name: str) -> str:
    packages = versions.get("packages") or {}
    value = packages.get(name) if isinstance(packages, dict) else None
    return str(value) if value else ""


def python_version(versions: Versions) -> str:
    """'3.9.18' from get_versions' '3.9.18.final.0'."""
    raw = package_version(versions, "python") or str((versions.get("host") or {}).get("python"))
    parts = raw.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 else raw


def facts_from_versions(role: str, address: str, versions: Versions) -> NodeFacts:
    """The little a versions answer tells, as facts the skew check can compare."""
    packages = {
        str(k): str(v)
        for k, v in (versions.get("packages") or {}).items()
        if v and k != "python"
    }
    return NodeFacts(
        host="",
        pid=0,
        user="",
        role=role,
        address=address,
        python=python_version(versions),
        python_executable="",
        platform="",
        glibc="",
        python_packages=packages,
        package_source="distributed.versions",
    )


def probe_scheduler(address: str, connection_args: dict[str, Any], timeout: float) -> PeerVersions:
    """The scheduler's versions within ``timeout``; Unreachable otherwise."""
    started = time.monotonic()
    try:
        return asyncio.run(
            asyncio.wait_for(_ask_scheduler(address, connection_args, timeout, started), timeout)
        )
    except (asyncio.TimeoutError, TimeoutError):
        raise Unreachable(
            f"no scheduler answered at {address} within {timeout:g} s "
            "(nothing listens there, a firewall drops it, or the process is hung)"
        ) from None
    except _NotAScheduler as e:
        raise Unreachable(f"not a Dask scheduler at {address}: {e}") from None
    except OSError as e:
        raise Unreachable(
            f"no scheduler answered at {address} within {timeout:g} s ({first_line(e)})"
        ) from None
    except Exception as e:  # the peer sent something no scheduler sends
        raise Unreachable(f"not a Dask scheduler at {address} ({first_line(e)})") from None


def with_workers(
    peer: PeerVersions, connection_args: dict[str, Any], timeout: float
) -> PeerVersions:
    """``peer`` plus its workers' versions, asked through the scheduler; a worker that does not
    answer within ``timeout`` (hung, or the broadcast as a whole is held up) is left out."""
    try:
        workers = asyncio.run(
            asyncio.wait_for(_ask_workers(peer.address, connection_args, timeout), timeout)
        )
    except Exception:  # best effort: the scheduler's own answer already says what matters
        return peer
    return PeerVersions(peer.address, peer.scheduler, workers, peer.seconds)


class _NotAScheduler(Exception):
    pass


class RawComm:
    """One raw comm to a Dask server, request-reply, closed on exit (any distributed version)."""

    def __init__(self, address: str, args: dict[str, Any], timeout: float) -> None:
        self.address, self.args, self.timeout = address, args, timeout

    async def __aenter__(self) -> RawComm:
        from distributed.comm import connect

        self.comm = await connect(self.address, timeout=self.timeout, **self.args)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.comm.abort()

    async def call(self, msg: dict[str, Any]) -> Any:
        await self.comm.write({**msg, "reply": True})
        return await self.comm.read()


async def _ask_scheduler(
    address: str, args: dict[str, Any], timeout: float, started: float
) -> PeerVersions:
    async with RawComm(address, args, timeout) as peer:
        identity = await peer.call({"op": "identity"})
        if not isinstance(identity, dict) or identity.get("type") != "Scheduler":
            kind = identity.get("type") if isinstance(identity, dict) else type(identity).__name__
            raise _NotAScheduler(f"it says it is a {kind!r}, not a Scheduler")
        scheduler = await peer.call(versions_msg())
    if not isinstance(scheduler, dict) or "packages" not in scheduler:
        raise _NotAScheduler("its 'versions' answer has no packages")
    return PeerVersions(address, scheduler, {}, time.monotonic() - started)


async def _ask_workers(address: str, args: dict[str, Any], timeout: float) -> dict:
    async with RawComm(address, args, timeout) as peer:
        # on_error "ignore": a worker whose connection fails is left out of the answer
        replies = await peer.call({"op": "broadcast", "msg": versions_msg(), "on_error": "ignore"})
    return answered(replies)


def versions_msg() -> dict[str, Any]:
    """distributed's plain `versions` op with the skew table's extra rows: no pickling, so a
    worker of any version, or one that cannot unpickle our code, answers it."""
    return {"op": "versions", "packages": list(ASKED)}


def answered(replies: Any) -> dict[str, Versions]:
    """address -> versions of the workers in a `versions` broadcast that answered one."""
    return {
        str(a): v for a, v in (replies or {}).items() if isinstance(v, dict) and "packages" in v
    }
