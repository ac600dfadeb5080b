"""A real Slurm of two nodes: slurmctld on a host of its own and one slurmd on each of two
hosts, every host a network namespace (tests/hosts/netns.py) with its own hostname, so srun
spans two machines as far as Slurm, gloo and envcheck can tell.

Each daemon runs under ``nsenter --net`` (not ``ip netns exec``, whose fresh /sys lacks the
cgroup tree slurmd wants; ../shared/INFRA.md) in a private mount namespace where /etc/hosts
is this cluster's (the node names resolve to their veth addresses, as DNS would) and the
slurmds see their own namespace's /sys/class/net (the veth under a rank's address and its
speed: the reference of the cross-host all-reduce). srun runs from the controller's host.
munged stays in the root namespace: its socket is a file, reachable from every namespace.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.hosts.netns import Hosts, namespaced_hosts
from tests.slurm.cluster import (
    COMMON_CONF,
    CPUS,
    DAEMONS,
    START_TIMEOUT,
    _start_munge,
    ensure_installed,
    first_job_id,
)
from tests.support.deadlines import HANG
from tests.support.ports import free_port

NODES = ("sn1", "sn2")
CONTROLLER = "ctl"
# inside a daemon's (or srun's) own mount namespace: this cluster's names; for a slurmd also
# its network namespace's /sys (mounted over the root's) with the root's cgroup tree kept
ENTER = """set -e
mount --make-rprivate /
mount --bind "$HOSTS_FILE" /etc/hosts
if [ -n "$OWN_SYS" ]; then
  mkdir -p "$OWN_SYS/cg" && mount --rbind /sys/fs/cgroup "$OWN_SYS/cg"
  mount -t sysfs sysfs /sys
  mount --rbind "$OWN_SYS/cg" /sys/fs/cgroup
fi
[ -z "$HOST" ] || hostname "$HOST"
exec "$@"
"""


@dataclass(frozen=True)
class TwoNodeSlurm:
    root: Path
    conf: Path
    hosts: Hosts
    gpus: int  # fake GRES GPUs per node

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def ip(self, node: str) -> str:
        return self.hosts.ip(node)

    def enter(self, host: str, argv: list[str], own_sys: bool = False,
              hostname: str = "") -> list[str]:
        """argv inside `host`'s network namespace and a mount namespace of its own."""
        return ["nsenter", f"--net=/run/netns/{self.hosts.ns(host)}", "unshare", "--mount",
                *(["--uts"] if hostname else []), "--", "env", f"HOSTS_FILE={self.root / 'hosts'}",
                f"OWN_SYS={self.root / host if own_sys else ''}", f"HOST={hostname}",
                "sh", "-c", ENTER, "sh", *argv]

    def srun(self, *args: str, timeout: float = 240, env: dict | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess:
        """srun from the controller's host (the nodes' addresses are reachable only there)."""
        return subprocess.run(self.enter(CONTROLLER, ["srun", *args]), capture_output=True,
                              text=True, timeout=timeout, env={**self.env, **(env or {})},
                              cwd=cwd)

    def shape(self, node: str, mbit: int) -> None:
        """A real slow link: `node`'s outgoing traffic limited to `mbit` Mb/s (tc tbf), while
        its veth still reports 10000 Mb/s."""
        subprocess.run(["ip", "netns", "exec", self.hosts.ns(node), "tc", "qdisc", "replace",
                        "dev", "eth0", "root", "tbf", "rate", f"{mbit}mbit", "burst", "64kbit",
                        "latency", "100ms"], check=True, capture_output=True)

    def unshape(self, node: str) -> None:
        subprocess.run(["ip", "netns", "exec", self.hosts.ns(node), "tc", "qdisc", "del",
                        "dev", "eth0", "root"], check=True, capture_output=True)


def _write_config(root: Path, hosts: Hosts, gpus: int) -> Path:
    dev = root / "dev"
    dev.mkdir()
    for i in range(gpus):
        os.mknod(dev / f"nvidia{i}", 0o666 | 0o020000, os.makedev(1, 3))  # /dev/null's numbers
    for d in ("state", "spool", "log"):
        (root / d).mkdir()
    (root / "hosts").write_text("127.0.0.1 localhost\n" + "".join(
        f"{hosts.ip(h)} {h}\n" for h in (CONTROLLER, *NODES)))
    memory_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 // 4
    nodes = "".join(
        f"NodeName={n} NodeAddr={hosts.ip(n)} NodeHostname={n} CPUs={CPUS} "
        f"RealMemory={memory_mib} Gres=gpu:{gpus} State=UNKNOWN\n" for n in NODES)
    partition = f"PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP"
    conf = root / "slurm.conf"
    conf.write_text(f"""ClusterName=envcheck2
SlurmctldHost={CONTROLLER}({hosts.ip(CONTROLLER)})
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
FirstJobId={first_job_id()}
AuthType=auth/munge
AuthInfo=socket={root / "munge" / "munge.socket"}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}/%n
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root / "log" / "slurmctld.log"}
SlurmdLogFile={root}/log/slurmd-%n.log
{COMMON_CONF}{nodes}{partition}
""")
    (root / "gres.conf").write_text("AutoDetect=off\n" + "".join(
        f"NodeName={n} Name=gpu File={dev}/nvidia[0-{gpus - 1}]\n" for n in NODES))
    return conf


def _wait_idle(slurm: TwoNodeSlurm, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    state = ""
    while time.monotonic() < deadline:
        p = subprocess.run(slurm.enter(CONTROLLER, ["sinfo", "-h", "-N", "-o", "%N %t"]),
                           env=slurm.env, capture_output=True, text=True)
        state = p.stdout.strip() or p.stderr.strip()
        if state.split() == [NODES[0], "idle", NODES[1], "idle"]:
            return
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.2)
    logs = "\n".join(f"{f.name}: {f.read_text()[-1200:]}"
                     for f in sorted((slurm.root / "log").glob("*.log")))
    raise RuntimeError(f"the two slurmd nodes never became idle (last: {state!r})\n{logs}")


@contextlib.contextmanager
def two_node_slurm(gpus: int = 2) -> Iterator[TwoNodeSlurm]:
    """Install (if needed) and start the controller and both nodes; stop them on the way out."""
    ensure_installed()
    root = Path(tempfile.mkdtemp(prefix="envcheck-slurm2-", dir="/tmp"))
    os.chmod(root, 0o755)  # munged runs as the munge user
    procs: list[subprocess.Popen] = []
    try:
        with namespaced_hosts(CONTROLLER, *NODES, prefix="sl") as hosts:
            conf = _write_config(root, hosts, gpus)
            slurm = TwoNodeSlurm(root, conf, hosts, gpus)
            _start_munge(root)
            daemons = [(CONTROLLER, [DAEMONS[1], "-D", "-i", "-f", str(conf)], False)]
            daemons += [(n, [DAEMONS[2], "-D", "-N", n, "-f", str(conf)], True) for n in NODES]
            for host, argv, own_sys in daemons:
                log = open(root / "log" / f"{host}.out", "w")  # noqa: SIM115 - closed below
                procs.append(subprocess.Popen(
                    slurm.enter(host, argv, own_sys=own_sys, hostname=host), env=slurm.env,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
                log.close()
            _wait_idle(slurm, procs)
            yield slurm
    finally:
        _stop(root, procs)
        shutil.rmtree(root, ignore_errors=True)


def _stop(root: Path, procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):  # the slurmds, then slurmctld
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, 15)
    for p in procs:
        try:
            p.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, 9)
            p.wait()
    munged = root / "munge" / "munged.pid"
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(munged.read_text().split()[0]), 15)
