"""Several "hosts" on one machine: a network namespace per host, each with its own hostname.

A bridge lives in a namespace of its own (the switch); every host namespace gets a veth pair,
`eth0` inside at 10.77.0.N/24, the other end on the bridge. Processes start in a host with
`ip netns exec NS unshare --uts` and set their hostname there, so facts name the host as a
real cluster's would. Addresses are only ever used between these namespaces, never from the
root namespace. What worked on this kind of machine: ../shared/INFRA.md, "Several hosts".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "10.77.0"


class Unavailable(Exception):
    """No root or no `ip netns` here: the tests skip with this reason."""


def _ip(*args: str) -> None:
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip()}")


@dataclass
class Hosts:
    tag: str
    names: tuple[str, ...]  # hostnames, in order; host i has address SUBNET.(i+1)
    procs: list[subprocess.Popen] = field(default_factory=list)

    def ns(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def ip(self, host: str) -> str:
        return f"{SUBNET}.{self.names.index(host) + 1}"

    def command(self, host: str, argv: list[str]) -> list[str]:
        """argv run inside `host`: its network namespace, its own UTS namespace and hostname."""
        return [
            "ip", "netns", "exec", self.ns(host), "unshare", "--uts", "--",
            "sh", "-c", 'hostname "$0" && exec "$@"', host, *argv,
        ]

    def start(self, host: str, argv: list[str], log: Path, env: dict | None = None,
              cwd: Path | None = None) -> subprocess.Popen:
        out = open(log, "w")  # noqa: SIM115 - closed when the process is reaped
        p = subprocess.Popen(self.command(host, argv), stdout=out, stderr=subprocess.STDOUT,
                             env={**os.environ, **(env or {})}, cwd=cwd)
        self.procs.append(p)
        return p

    def run(self, host: str, argv: list[str], timeout: float, env: dict | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(host, argv), capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)

    def link(self, host: str, up: bool) -> None:
        """Take the host's only link down (or up): it vanishes from the network, unannounced."""
        _ip("-n", self.ns(host), "link", "set", "eth0", "up" if up else "down")

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
        for p in self.procs:
            p.wait()
        self.procs.clear()


@contextlib.contextmanager
def namespaced_hosts(*names: str, prefix: str = "ec") -> Iterator[Hosts]:
    """Namespaces for `names` joined by one bridge; removed (with their links) on the way out.
    `prefix` keeps two sets of one test process apart (a module's and a test's)."""
    if os.geteuid() != 0:
        raise Unavailable("network namespaces need root")
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        raise Unavailable("ip (iproute2) or unshare (util-linux) is missing")
    tag = f"{prefix}{os.getpid() % 100000}"  # unique per test process; interface names <= 15 chars
    hosts = Hosts(tag, names)
    switch = f"{tag}-sw"
    made: list[str] = []
    try:
        try:
            _ip("netns", "add", switch)
        except RuntimeError as e:
            raise Unavailable(f"cannot make a network namespace: {e}") from None
        made.append(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        for i, host in enumerate(names):
            ns = hosts.ns(host)
            _ip("netns", "add", ns)
            made.append(ns)
            port = f"{tag}p{i}"
            _ip("link", "add", port, "netns", switch, "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _ip("-n", switch, "link", "set", port, "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield hosts
    finally:
        hosts.stop()
        for ns in reversed(made):
            with contextlib.suppress(RuntimeError):
                _ip("netns", "del", ns)
