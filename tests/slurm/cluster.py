"""A real single-node Slurm for tests: munged + slurmctld + slurmd with two fake GRES GPUs.

Everything lives in one private directory (config, keys, sockets, spool, logs) on free ports,
so it never touches /etc/slurm or another Slurm on the machine. The fake GPUs are character
devices (Slurm rejects plain files in gres.conf); there is no GPU behind them, so NVML sees
none and only Slurm's bookkeeping (SLURM_*_GPUS, CUDA_VISIBLE_DEVICES) is real.
What worked on this kind of machine: ../shared/INFRA.md, "Slurm".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.deadlines import HANG
from tests.support.ports import free_port

PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
START_TIMEOUT = 30.0
# Declared, not real (config_overrides): a GPU node has more cores than GPUs, and a job asking
# for one task per GPU must meet the GRES limit, not this 2-core machine's CPU count, first.
CPUS = 8


class Unavailable(Exception):
    """This machine cannot run Slurm (not root, no apt): the tests skip with this reason."""


@dataclass(frozen=True)
class Slurm:
    root: Path
    conf: Path
    node: str
    gpus: int

    @property
    def env(self) -> dict[str, str]:
        """Environment for sbatch/srun/squeue/scontrol (and envcheck slurm --submit)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, check: bool = True, timeout: float = 30) -> str:
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode:
            raise RuntimeError(f"{' '.join(cmd)} -> {p.returncode}: {p.stderr.strip()}")
        return p.stdout


def ensure_installed() -> float:
    """apt-get install slurm-wlm and munge when missing; seconds spent (0 when present)."""
    if all(os.path.exists(d) for d in DAEMONS):
        return 0.0
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable("Slurm is not installed and this is not root with apt-get")
    t0 = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES]
    updated = False
    for attempt in range(30):  # another apt-get may hold the dpkg lock for a while
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode == 0:
            return time.monotonic() - t0
        # another apt-get holding the lock is waited for; a missing package list is fetched
        # once; any other refusal (no network, "are you root?") ends at once instead of
        # after 30 tries (seen: 212 s on a GPU machine without network)
        held = "Could not get lock" in p.stderr or "is held by process" in p.stderr
        if not held or attempt == 29:
            if "Unable to locate" in p.stderr and not updated:
                updated = True
                subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
                continue
            raise Unavailable(f"apt-get install {' '.join(PACKAGES)} failed: {p.stderr[-300:]}")
        time.sleep(2)
    raise Unavailable("apt-get never got the dpkg lock")


# The slurm.conf lines every test cluster shares (this one-node cluster, nodes.py's two nodes):
# no cgroups, accounting or mail; GPUs as gres; a node that comes back returns to service.
COMMON_CONF = """ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu
MailProg=/bin/true
KillWait=2
MinJobAge=600
InactiveLimit=0
SchedulerParameters=sched_interval=1
SlurmdParameters=config_overrides
"""


def first_job_id() -> int:
    """A random FirstJobId for a test cluster. Each xdist worker starts its own cluster on this
    one host, and each would number its jobs from 1; a launch's id (SLURM_JOB_ID.STEP) names
    its rendezvous port and secret file, so two clusters' job 2.0 at once would meet each
    other (seen: "rank 1 is claimed twice", by a rank of the other cluster's job)."""
    import random

    return random.SystemRandom().randrange(1_000, 60_000_000)  # MaxJobId is 67,043,328


def _write_config(root: Path, node: str, gpus: int, real_gpus: bool = False) -> Path:
    memory_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    dev = Path("/dev") if real_gpus else root / "dev"
    if not real_gpus:
        dev.mkdir()
    for i in range(gpus if not real_gpus else 0):
        # /dev/null's numbers: a character device, which is all gres.conf's File= demands
        os.mknod(dev / f"nvidia{i}", 0o666 | 0o020000, os.makedev(1, 3))
    for d in ("state", "spool", "log"):
        (root / d).mkdir()
    conf = root / "slurm.conf"
    node_line = (
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={CPUS} "
        f"RealMemory={max(memory_mib - 1024, 512)} Gres=gpu:{gpus} State=UNKNOWN"
    )
    conf.write_text(
        f"""ClusterName=envcheck
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
FirstJobId={first_job_id()}
AuthType=auth/munge
AuthInfo=socket={root / "munge" / "munge.socket"}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd.pid"}
SlurmctldLogFile={root / "log" / "slurmctld.log"}
SlurmdLogFile={root / "log" / "slurmd.log"}
{COMMON_CONF}{node_line}
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""
    )
    (root / "gres.conf").write_text(
        f"AutoDetect=off\nNodeName={node} Name=gpu File={dev}/nvidia[0-{gpus - 1}]\n"
    )
    return conf


def _start_munge(root: Path) -> None:
    import pwd

    munge = pwd.getpwnam("munge")
    d = root / "munge"
    d.mkdir(mode=0o755)
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    for p in (d, key):
        os.chown(p, munge.pw_uid, munge.pw_gid)
    subprocess.run(
        [
            "runuser", "-u", "munge", "--", DAEMONS[0],
            f"--key-file={key}", f"--socket={d / 'munge.socket'}",
            f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}",
            f"--seed-file={d / 'munged.seed'}",
        ],
        check=True,
        capture_output=True,
    )


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    """Running, not a zombie: a stopped daemon lingers as Z for a while (INFRA.md)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_idle(slurm: Slurm) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    state = ""
    while time.monotonic() < deadline:
        p = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%t"], env=slurm.env, capture_output=True, text=True
        )
        state = p.stdout.strip() or p.stderr.strip()
        if state == "idle":
            return
        time.sleep(0.2)
    logs = "\n".join(
        f.read_text()[-1500:] for f in sorted((slurm.root / "log").glob("*.log"))
    )
    raise RuntimeError(f"slurm node never became idle (last: {state!r})\n{logs}")


def daemon_pids(root: Path) -> list[int]:
    return [
        p
        for p in (
            _pid(root / "munge" / "munged.pid"),
            _pid(root / "slurmctld.pid"),
            _pid(root / "slurmd.pid"),
        )
        if p is not None
    ]


def stop(root: Path, conf: Path) -> None:
    env = {**os.environ, "SLURM_CONF": str(conf)}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["scancel", "--full", "--user=root"], env=env, timeout=HANG)
    pids = daemon_pids(root)
    for pid in reversed(pids):  # slurmd, slurmctld, then munged
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def single_node_slurm(gpus: int = 2, real_gpus: bool = False) -> Iterator[Slurm]:
    """Install (if needed) and start a one-node Slurm; stop every daemon on the way out.

    real_gpus: GRES on the machine's own /dev/nvidia0..gpus-1 instead of stand-ins."""
    if os.geteuid() != 0:
        raise Unavailable("starting slurmd needs root")
    ensure_installed()
    node = socket.gethostname().split(".")[0]
    # /tmp, not pytest's 0700 tmp: munged runs as the munge user and must reach its files
    root = Path(tempfile.mkdtemp(prefix="envcheck-slurm-", dir="/tmp"))
    os.chmod(root, 0o755)
    conf = _write_config(root, node, gpus, real_gpus)
    slurm = Slurm(root, conf, node, gpus)
    try:
        _start_munge(root)
        for daemon, flags in ((DAEMONS[1], ("-i",)), (DAEMONS[2], ())):
            subprocess.run([daemon, "-f", str(conf), *flags], check=True, env=slurm.env,
                           capture_output=True)
        _wait_idle(slurm)
        yield slurm
    finally:
        stop(root, conf)
        shutil.rmtree(root, ignore_errors=True)
