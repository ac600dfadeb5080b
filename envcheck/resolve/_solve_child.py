"""Solver child process: reads one JSON request per line on stdin, answers one JSON line.

Runs apart from the envcheck process because py-rattler 0.28 sometimes crashes (SIGSEGV/SIGABRT)
while the interpreter shuts down after a solve. This process never shuts the interpreter down: it
leaves through ``os._exit``, and the parent ignores how it ends once its answers are in.
It imports only the stdlib and rattler, so it starts in about 0.1 s. One Gateway lives as long as
the process, so repeated solves (conflict bisection) read each channel's repodata once.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import rattler
from rattler import BuildString, GenericVirtualPackage, PackageName, Version, exceptions
from rattler.exceptions import GatewayError, SolverError

# rattler's errors for text it cannot parse: the request, not the solver, is at fault
_PARSE_ERRORS = tuple(getattr(exceptions, name) for name in (
    "InvalidChannelError", "InvalidMatchSpecError", "InvalidPackageNameError", "InvalidUrlError",
    "InvalidVersionError", "InvalidVersionSpecError", "ParseArchError", "ParseSubdirError",
))


def _record(r: Any) -> dict[str, Any]:
    ts = r.timestamp
    return {
        "name": r.name.source,
        "version": str(r.version),
        "build": str(r.build),
        "build_number": r.build_number,
        "channel": r.channel,
        "subdir": r.subdir,
        "url": r.url,
        "md5": r.md5.hex() if r.md5 else None,
        "sha256": r.sha256.hex() if r.sha256 else None,
        "depends": list(r.depends),
        "constrains": list(r.constrains),
        "size": r.size,
        "timestamp": int(ts.timestamp() * 1000) if ts is not None else None,
    }


class _Solver:
    def __init__(self) -> None:
        # channel URL -> mirror (envcheck.mirrors, checked by the parent): repodata comes
        # from the mirror, the records keep the channel's URLs
        table = json.loads(os.environ.get("ENVCHECK_SOLVER_MIRRORS") or "{}")
        client = None
        if table:
            from rattler.networking import Client, MirrorMiddleware

            client = Client([MirrorMiddleware({k: [v] for k, v in table.items()})])
        self.gateway = rattler.Gateway(client=client)
        self.seen: dict[str, list[Any]] = {}  # repodata path -> [mtime_ns, size] last read

    def solve(
        self, req: dict[str, Any], progress: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        # The parent sends the stat of every local repodata.json; when one changed since the
        # last solve, that channel's in-memory repodata is stale and must be read again.
        for channel, path, *stat in req.get("fingerprint", []):
            if self.seen.get(path, stat) != stat:
                self.gateway.clear_repodata_cache(channel)
            self.seen[path] = stat
        try:
            vps = [
                GenericVirtualPackage(PackageName(n), Version(v), BuildString(b))
                for n, v, b in req["virtual_packages"]
            ]
        except (*_PARSE_ERRORS, ValueError) as e:  # BuildString raises a plain ValueError
            return {"ok": False, "kind": "input", "message": f"{type(e).__name__}: {e}"}
        try:
            if req.get("prefetch"):
                # remote repodata first, in a phase the parent bounds (--fetch-timeout); the
                # solve below finds it in the gateway's memory
                asyncio.run(
                    self.gateway.query(
                        req["channels"],
                        [req["platform"], "noarch"],
                        [*req["specs"], *(req.get("constraints") or [])],
                        recursive=True,
                    )
                )
                progress({"phase": "fetched"})
            records = asyncio.run(
                rattler.solve(
                    req["channels"],
                    req["specs"],
                    gateway=self.gateway,
                    platforms=[req["platform"], "noarch"],
                    virtual_packages=vps,
                    constraints=req.get("constraints") or None,
                    timeout=datetime.timedelta(seconds=req["timeout"]),
                )
            )
        except SolverError as e:
            return {"ok": False, "kind": "solve", "message": str(e)}
        except GatewayError as e:
            return {"ok": False, "kind": "channel", "message": str(e)}
        except _PARSE_ERRORS as e:
            return {"ok": False, "kind": "input", "message": f"{type(e).__name__}: {e}"}
        except Exception as e:  # any other rattler failure: report it, keep serving
            return {"ok": False, "kind": "error", "message": f"{type(e).__name__}: {e}"}
        return {"ok": True, "records": [_record(r) for r in records]}


def _die_with_parent() -> None:
    """Have the kernel kill this process when envcheck dies, even by SIGKILL (Linux).

    Otherwise a solve nobody waits for runs on until its own timeout (minutes, GBs of memory).
    """
    parent = os.environ.get("ENVCHECK_SOLVER_PARENT")
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the parent's own cleanup is all there is
    if parent and os.getppid() != int(parent):  # it died before prctl took effect
        os._exit(0)


def main() -> None:
    _die_with_parent()
    # Answers go to a private copy of stdout; anything rattler prints lands on stderr instead.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    solver = _Solver()

    def progress(msg: dict[str, Any]) -> None:
        answers.write(json.dumps(msg) + "\n")
        answers.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = json.dumps(solver.solve(json.loads(line), progress))
        except Exception as e:  # a malformed request must not kill the server silently
            failure = {"ok": False, "kind": "error", "message": f"{type(e).__name__}: {e}"}
            reply = json.dumps(failure)
        answers.write(reply + "\n")
        answers.flush()
    answers.flush()
    os._exit(0)  # skip interpreter finalization: that is where rattler 0.28 crashes


if __name__ == "__main__":
    main()
