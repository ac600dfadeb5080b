"""Real Ray clusters for `verify ray`: a head and nodes, each in its own network namespace with
its own hostname (tests/hosts/netns.py), started with `ray start --block` in a session of their
own and stopped by killing that process group (never `ray stop`: it kills every Ray process on
the machine by name). RAY_USAGE_STATS_ENABLED=0 everywhere: nothing leaves the machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.hosts.netns import Hosts, Unavailable, namespaced_hosts
from tests.support.old_envs import EnvSpec, OldEnv, build_env

PORT = 6390
# Token authentication off: these clusters live in private namespaces, and a token left in
# ~/.ray by an earlier local cluster must not decide whether a test's node may join.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DISABLE_IMPORT_WARNING": "1",
           "RAY_AUTH_MODE": "disabled"}


def _ray_version() -> str:
    from importlib.metadata import version

    return version("ray")


OTHER_NUMPY = "2.3.5"


def other_numpy_spec() -> EnvSpec:
    """The same Ray (Ray refuses a node of another Ray or Python at join) with another numpy,
    and no torch: a node whose environment drifted from the head's."""
    return EnvSpec("ray-other-numpy", f"{sys.version_info[0]}.{sys.version_info[1]}",
                   (f"ray[default]=={_ray_version()}", f"numpy=={OTHER_NUMPY}"),
                   "a Ray node whose numpy drifted from the head's")


@dataclass
class RayCluster:
    hosts: Hosts
    temp: Path
    groups: list[subprocess.Popen] = field(default_factory=list)
    # each host's `ray start`, its command and log: a node is started again if Ray gave up on it
    started: dict[str, tuple[subprocess.Popen, list[str], str]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.hosts.ip('head')}:{PORT}"

    def _start(self, host: str, argv: list[str], log: str) -> None:
        out = open(self.temp / log, "a")  # noqa: SIM115 - closed when the process is reaped
        # ahead of the other test processes on the CPU (as root; `nice` runs it unchanged
        # otherwise): Ray gives a new node a fixed 30 s to register, a real node has its
        # machine to itself, and what is tested is `verify ray`, not Ray's start under load
        self.groups.append(subprocess.Popen(
            ["nice", "-n", "-10", *self.hosts.command(host, argv)], stdout=out,
            stderr=subprocess.STDOUT, env={**os.environ, **RAY_ENV}, start_new_session=True))
        self.started[host] = (self.groups[-1], argv, log)

    def start_head(self) -> None:
        ray = str(Path(sys.executable).parent / "ray")
        self._start("head", [ray, "start", "--head", "--block", "--port", str(PORT),
                             "--num-cpus", "1", "--include-dashboard", "false",
                             "--node-ip-address", self.hosts.ip("head"),
                             "--temp-dir", str(self.temp / "ray")], "head.log")

    def start_node(self, host: str, python: str = sys.executable, gpus: int | None = None) -> None:
        ray = str(Path(python).parent / "ray")
        extra = ["--num-gpus", str(gpus)] if gpus is not None else []
        self._start(host, [ray, "start", "--address", self.address, "--block", "--num-cpus",
                           "1", "--node-ip-address", self.hosts.ip(host), *extra], f"{host}.log")

    def _restart_exited(self, most: int) -> list[str]:
        """`ray start` gives up on a node whose raylet has not registered within 30 s (Ray's own
        constant), which a loaded 2-core machine can exceed: such a node is started again (at
        most `most` of them)."""
        again = [host for host, (p, _, _) in self.started.items()
                 if host != "head" and p.poll() is not None][:most]
        for host in again:
            p, argv, log = self.started[host]
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)  # what the failed start left of its node
            self._start(host, argv, log)
        return again

    def wait_nodes(self, count: int, timeout: float = 150, restarts: int = 2) -> None:
        """Wait until `count` nodes are alive. A node whose `ray start` exits meanwhile is
        started again at once, up to `restarts` times in all; the head never is."""
        probe = ("import ray, sys, time; ray.init(address=sys.argv[1], log_to_driver=False)\n"
                 "end = time.time() + float(sys.argv[3])\n"
                 "while sum(n['Alive'] for n in ray.nodes()) < int(sys.argv[2]):\n"
                 "    assert time.time() < end, ray.nodes(); time.sleep(0.3)\n")
        argv = [sys.executable, "-c", probe, self.address, str(count), str(timeout)]
        with tempfile.TemporaryFile("w+") as err:
            p = subprocess.Popen(self.hosts.command("head", argv), stdout=subprocess.DEVNULL,
                                 stderr=err, env={**os.environ, **RAY_ENV})
            restarts = self._watch(p, timeout + 30, restarts)
            err.seek(0)
            failed = err.read()[-1500:]
        logs = "".join((self.temp / f).read_text()[-600:] for f in os.listdir(self.temp)
                       if f.endswith(".log"))
        assert p.returncode == 0, f"{failed}\n{restarts} restart(s) left\n{logs}"

    def _watch(self, probe: subprocess.Popen, timeout: float, restarts: int) -> int:
        """Restart exited nodes while `probe` runs; kill it after `timeout` seconds."""
        end = time.monotonic() + timeout
        while probe.poll() is None:
            if time.monotonic() > end:
                probe.kill()
                probe.wait()
                break
            restarts -= len(self._restart_exited(restarts))
            time.sleep(0.5)
        return restarts

    def verify(self, *flags: str, timeout: float = 150) -> subprocess.CompletedProcess:
        return self.hosts.run("head", [sys.executable, "-m", "envcheck", "verify", "ray",
                                       self.address, *flags], timeout=timeout, env=RAY_ENV)

    def stop(self) -> None:
        for p in self.groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in self.groups:
            p.wait()
        self.groups.clear()
        self.started.clear()
        # the raylets' own `ray::` workers leave by themselves once the raylet is gone
        time.sleep(0.5)


@pytest.fixture(scope="module")
def ray_hosts() -> Iterator[RayCluster]:
    temp = Path(tempfile.mkdtemp(prefix="ecray"))  # short: Ray's socket paths must fit 107 bytes
    try:
        with namespaced_hosts("head", "nodeA", "nodeB", prefix="er") as hosts:
            cluster = RayCluster(hosts, temp)
            try:
                cluster.start_head()
                cluster.start_node("nodeA")
                cluster.wait_nodes(2)
                yield cluster
            finally:
                cluster.stop()
    except Unavailable as e:
        pytest.fail(f"namespaced hosts did not start: {e}", pytrace=False)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_other_numpy_env() -> OldEnv:
    return build_env(other_numpy_spec(), with_envcheck=False)
