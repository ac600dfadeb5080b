"""The only place that calls the solver: py-rattler, run in a long-lived child process.

Why a child: py-rattler 0.28 sometimes crashes (SIGSEGV/SIGABRT) at interpreter exit after a solve;
it never does when the solve ran in another process. One child serves every solve of this process
(bisection runs many), keeps repodata in memory between solves and is closed at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from envcheck.errors import BadInput, EnvcheckError, Unreachable
from envcheck.lockfile.names import PLATFORM_ARCH
from envcheck.text import without_prefix

CHANNEL_ALIAS = "https://conda.anaconda.org"
_CHILD_SCRIPT = Path(__file__).with_name("_solve_child.py")
# Reading local repodata (file:// channels, no separate fetch phase) before the solver's own
# timeout starts counting; and the slack after a fetch, for turning records into the reply.
_FETCH_ALLOWANCE_S = 300.0
_REPLY_ALLOWANCE_S = 60.0
# How long fetching a remote channel's repodata may take (build --fetch-timeout): a server
# that accepts a connection and never answers must not hold a build for ever.
DEFAULT_FETCH_TIMEOUT_S = 120.0
# conda-forge builds for linux-64 target kernel >= 3.10 (the CentOS 7 kernel): the lowest kernel
# envcheck's targets run, so packages that need a newer kernel are not picked silently.
DEFAULT_LINUX = "3.10"


@dataclass(frozen=True)
class SolvedPackage:
    """One record the solver picked, as plain data (no rattler objects cross the process edge)."""

    name: str
    version: str
    build: str
    build_number: int
    channel: str
    subdir: str
    url: str
    md5: str | None
    sha256: str | None
    depends: tuple[str, ...]
    constrains: tuple[str, ...]
    size: int | None
    timestamp: int | None  # milliseconds since the epoch, as in repodata


class SolveFailed(Exception):
    """The solver found no solution; ``message`` is its full text."""

    def __init__(self, message: str) -> None:
        super().__init__(message.splitlines()[0] if message else "unsolvable")
        self.message = message


def resolve_channel(channel: str) -> str:
    """A channel name becomes its anaconda.org URL; URLs stay as they are (without a final /)."""
    if "://" in channel:
        scheme = channel.split("://", 1)[0]
        if scheme not in ("https", "http", "file"):
            raise BadInput(f"channel {channel}: only https://, http:// and file:// URLs work")
        url = channel.rstrip("/")
    else:
        url = f"{CHANNEL_ALIAS}/{channel.strip('/')}"
    # parsed as rattler.solve parses it (Channel(str)), so a URL it cannot read is bad input
    # here rather than a solver failure later
    from rattler import Channel
    from rattler.exceptions import InvalidChannelError

    try:
        Channel(url)
    except InvalidChannelError as e:
        raise BadInput(f"channel {channel}: {one_line(str(e))}") from None
    return url


def one_line(message: str) -> str:
    """rattler's 'problem\nCaused by: cause' as 'problem (cause)'."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return "no message"
    causes = [without_prefix(ln, "Caused by:").strip() for ln in lines[1:]]
    return lines[0] + (f" ({'; '.join(c for c in causes if c)})" if any(causes) else "")


def is_local(url: str) -> bool:
    return url.startswith("file://")


def local_path(url: str) -> Path:
    return Path(unquote(urlparse(url).path))


def virtual_packages(system: Mapping[str, str], platform: str) -> dict[str, str]:
    """Virtual packages of the target machines: name -> version.

    ``system`` holds cuda, glibc and optionally linux and archspec (a microarchitecture name,
    which is __archspec's build string; its version is always 1).
    """
    vps: dict[str, str] = {}
    if platform.startswith(("linux-", "osx-")):
        vps["__unix"] = "0"
    if platform.startswith("linux-"):
        vps["__linux"] = system.get("linux", DEFAULT_LINUX)
        if "glibc" in system:
            vps["__glibc"] = system["glibc"]
    if platform.startswith("win-"):
        vps["__win"] = "0"
    if "cuda" in system:
        vps["__cuda"] = system["cuda"]
    arch = system.get("archspec", PLATFORM_ARCH.get(platform))
    if arch:
        vps["__archspec"] = arch
    return vps


def _vp_triples(vps: Mapping[str, str]) -> list[tuple[str, str, str]]:
    # __archspec carries the microarchitecture in its build string; the others build "0".
    return [
        (name, "1", value) if name == "__archspec" else (name, value, "0")
        for name, value in sorted(vps.items())
    ]


def _fingerprint(urls: Sequence[str], platform: str) -> list[list[Any]]:
    """Check local channels exist; return a stat of their repodata so the child sees edits."""
    fp: list[list[Any]] = []
    for url in urls:
        if not is_local(url):
            continue
        root = local_path(url)
        if not root.is_dir():
            raise BadInput(f"channel {url} does not exist (no directory {root})")
        found = False
        for sd in (platform, "noarch"):
            rd = root / sd / "repodata.json"
            try:
                st = rd.stat()
            except FileNotFoundError:
                if sd == "noarch":
                    raise BadInput(
                        f"channel {url} is not a conda channel: {rd} is missing"
                    ) from None
                continue
            found = True
            fp.append([url, str(rd), st.st_mtime_ns, st.st_size])
        if not found:
            raise BadInput(f"channel {url} has no repodata.json")
    return fp


class _FetchTimeout(Exception):
    """The child did not finish fetching remote repodata in time."""


class _Child:
    """One solver process and its pipes."""

    def __init__(self) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the child
        self._buf = b""
        # (channels, platform) -> the specs whose repodata this child has fetched
        self.fetched: dict[tuple[tuple[str, ...], str], set[str]] = {}
        # the child ends itself when this process dies (even by SIGKILL): see _solve_child
        from envcheck.mirrors import mirrors

        env = dict(os.environ, PYTHONUNBUFFERED="1", ENVCHECK_SOLVER_PARENT=str(os.getpid()),
                   ENVCHECK_SOLVER_MIRRORS=json.dumps(mirrors()))
        self.proc = subprocess.Popen(
            [sys.executable, str(_CHILD_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            # its own process group: a Ctrl-C in a terminal reaches envcheck, which then
            # ends the child, instead of both dying mid-reply
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(
        self, request: dict[str, Any], fetch_timeout: float, solve_timeout: float
    ) -> dict[str, Any] | None:
        """Send one request; the reply, or None when the child died before answering.

        A request with ``prefetch`` makes the child fetch repodata first and say so: that
        phase must end within ``fetch_timeout`` (else _FetchTimeout), the solve within
        ``solve_timeout`` after it (else TimeoutError).
        """
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        fetching = bool(request.get("prefetch"))
        if fetching:
            deadline = time.monotonic() + fetch_timeout
        else:
            deadline = time.monotonic() + solve_timeout + _FETCH_ALLOWANCE_S
        while True:
            try:
                line = self._readline(deadline)
            except TimeoutError:
                if fetching:
                    raise _FetchTimeout from None
                raise
            if line is None:
                return None
            reply = json.loads(line)
            if reply.get("phase") == "fetched":
                fetching = False
                deadline = time.monotonic() + solve_timeout + _REPLY_ALLOWANCE_S
                continue
            return reply

    def _readline(self, deadline: float) -> bytes | None:
        """One line from the child's answers, or None at EOF; TimeoutError at ``deadline``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def kill(self) -> None:
        """End the child's whole process group at once."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            self.proc.kill()

    def stderr_tail(self, n: int = 4000) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-n:]

    def death(self) -> str:
        code = self.proc.wait()
        if code < 0:
            return f"signal {signal.Signals(-code).name}"
        return f"exit code {code}"

    def close(self) -> None:
        """End the child; how it ends is irrelevant once its answers are in.

        An interrupt while waiting (at exit, say) kills it instead of leaving it behind.
        """
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError, KeyboardInterrupt):
            self.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.stderr.close()


_lock = threading.Lock()
_child: _Child | None = None


def _get_child() -> _Child:
    global _child
    if _child is None or not _child.alive():
        if _child is not None:
            _child.close()
        _child = _Child()
    return _child


def start_solver() -> None:
    """Start the solver child now, so that its start-up (Python, rattler) overlaps the
    caller's own work before the first solve."""
    with _lock:
        _get_child()


def shutdown() -> None:
    """End the solver child (also done at exit)."""
    global _child
    with _lock:
        if _child is not None:
            _child.close()
            _child = None


atexit.register(shutdown)


def solve_specs(
    specs: Sequence[str],
    channels: Sequence[str],
    platform: str,
    virtual_packages: Mapping[str, str],
    *,
    timeout: float = 600,
    constraints: Sequence[str] = (),
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S,
) -> list[SolvedPackage]:
    """Solve ``specs`` for ``platform`` (plus noarch) against ``channels``.

    ``constraints`` restrict what may be installed without requesting it (used for exclusions).
    Raises SolveFailed when there is no solution, BadInput for a local channel that does not
    exist or for channel data that is not repodata, Unreachable for a remote channel whose
    repodata cannot be fetched (within ``fetch_timeout`` seconds).
    """
    from envcheck.resolve.spec import solver_spec  # rattler, only when something is solved

    urls = [resolve_channel(c) for c in channels]
    try:  # conda's reading of each spec, in the text the solver's strict parser reads alike
        solver_specs = [solver_spec(s) for s in specs]
        solver_constraints = [solver_spec(s) for s in constraints]
    except ValueError as e:
        raise BadInput(f"the solver cannot parse its input: {e}") from None
    request = {
        "specs": solver_specs,
        "channels": urls,
        "platform": platform,
        "virtual_packages": _vp_triples(virtual_packages),
        "constraints": solver_constraints,
        "timeout": timeout,
        "fingerprint": _fingerprint(urls, platform),
    }
    remote = [u for u in urls if not is_local(u)]
    reply = _ask_child(request, (tuple(urls), platform), remote, {*specs, *constraints},
                       fetch_timeout, timeout)
    if reply["ok"]:
        return [_to_solved(r) for r in reply["records"]]
    raise _failure(reply, remote)


def _drop_child(child: Any) -> None:
    """End the solver child; the next solve starts a fresh one."""
    global _child
    child.kill()
    child.close()
    _child = None


def _ask_child(
    request: dict[str, Any],
    key: tuple[tuple[str, ...], str],
    remote: list[str],
    wanted: set[str],
    fetch_timeout: float,
    timeout: float,
) -> dict[str, Any]:
    """The solver child's reply; a child that dies mid-solve gets one fresh successor."""
    global _child
    reply = None
    with _lock:
        for _attempt in range(2):
            child = _get_child()
            # remote repodata is fetched in its own, bounded phase (once per set of specs)
            request["prefetch"] = bool(remote) and not wanted <= child.fetched.get(key, set())
            try:
                reply = child.ask(request, fetch_timeout, timeout)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM (envcheck.interrupts)
                _drop_child(child)  # it would finish a solve nobody waits for
                raise
            except _FetchTimeout:
                _drop_child(child)
                raise Unreachable(
                    f"channel data from {', '.join(remote)} did not arrive within "
                    f"{fetch_timeout:g} s (the server does not answer; --fetch-timeout "
                    "sets the limit)"
                ) from None
            except TimeoutError:
                _drop_child(child)
                raise EnvcheckError(f"the solver did not finish within {timeout:.0f} s") from None
            if reply is not None:
                if request["prefetch"] and (reply["ok"] or reply["kind"] == "solve"):
                    child.fetched.setdefault(key, set()).update(wanted)
                return reply
            how, tail = child.death(), child.stderr_tail()
            child.close()
            _child = None
    raise EnvcheckError(f"the solver process died ({how})", detail=tail or None)


def _failure(reply: dict[str, Any], remote: list[str]) -> Exception:
    """The error a failed reply stands for: unsolvable, bad or unreachable channel, bad input."""
    if reply["kind"] == "solve":
        return SolveFailed(reply["message"])
    if reply["kind"] == "channel":
        first = reply["message"].splitlines()[0]
        if remote and bad_channel_data(reply["message"]):
            # the server answered: with a 4xx or with something that is not repodata
            return BadInput(
                f"bad channel data from {', '.join(remote)}: {one_line(reply['message'])}",
                detail=reply["message"],
            )
        if remote:
            from envcheck.network import root_cause

            return Unreachable(
                f"channel data cannot be fetched from here ({root_cause(reply['message'])}); "
                "build this lock on a machine that reaches " + ", ".join(remote) + ", or "
                "through a proxy or mirror (see envcheck docs build: Proxies and mirrors)",
                detail=reply["message"],
            )
        return BadInput(f"bad channel: {first}", detail=reply["message"])
    if reply["kind"] == "input":
        # a spec, constraint, channel or virtual package the solver cannot parse: the input
        # is at fault (recipes are validated the same way, so this is for other callers)
        return BadInput(f"the solver cannot parse its input: {one_line(reply['message'])}")
    return EnvcheckError(
        f"the solver failed: {reply['message'].splitlines()[0]}", detail=reply["message"]
    )


# rattler's words for a server that answered, but not with repodata (vs. one not reached)
_ANSWERED = ("failed to parse", "HTTP status client error", "could not find subdir")


def bad_channel_data(message: str) -> bool:
    """Whether rattler's channel error says the server answered with bad data or a 4xx."""
    return any(words in message for words in _ANSWERED)


def _to_solved(r: dict[str, Any]) -> SolvedPackage:
    return SolvedPackage(
        name=r["name"],
        version=r["version"],
        build=r["build"],
        build_number=int(r["build_number"]),
        channel=r["channel"] or "",
        subdir=r["subdir"],
        url=r["url"],
        md5=r["md5"],
        sha256=r["sha256"],
        depends=tuple(r["depends"]),
        constrains=tuple(r["constrains"]),
        size=r["size"],
        timestamp=r["timestamp"],
    )
