"""Rank 0's rendezvous store under a flood from another uid: a real rank 0 (its rank 1 never
comes) and a flooder as uid `nobody`, without the job's secret, speaking TCPStore's protocol
to rank 0's port: sets of new keys as fast as it can over many connections, hundreds of
connections that never say a word, and a pipeline of GETs whose replies it never reads. Rank
0's peak memory (VmHWM in /proc/PID/status) stays within the bound its store states
(store.Limits.bound()), and rank 0 still reports what it saw."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.verify.job import store
from tests.support.nobody import AS_NOBODY
from tests.support.ports import free_port

pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.slow

TIMEOUT = 40  # rank 0 waits this long for its rank 1, flooded meanwhile
FLOOD = 8.0  # seconds of flood

FLOODER = r"""
import socket, struct, sys, threading, time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
end = time.monotonic() + seconds
sent = {"sets": 0, "gets": 0, "idle": 0}
HELLO = b"\x00" + struct.pack("<I", 0x3C85F7CE)


def blob(b):
    return struct.pack("<Q", len(b)) + b


def conn():
    s = socket.create_connection(("127.0.0.1", port), 2)
    s.settimeout(2)
    s.sendall(HELLO)
    return s


def sets(n):
    value, i = b"x" * (200 << 10), 0
    while time.monotonic() < end:
        try:
            s = conn()
            while time.monotonic() < end:
                i += 1
                s.sendall(b"\x01" + blob(b"/flood/%d/%d" % (n, i)) + blob(value))
                sent["sets"] += len(value)
        except OSError:
            time.sleep(0.01)


def gets():  # one value, then GETs of it whose replies are never read
    try:
        s = conn()
        s.sendall(b"\x01" + blob(b"/amp") + blob(b"y" * (200 << 10)))
        req = b"\x03" + blob(b"/amp")
        while time.monotonic() < end:
            s.sendall(req * 64)
            sent["gets"] += 64
    except OSError:
        pass


def idle():  # connections that never say a word, once the sets have filled the store
    while time.monotonic() < end - seconds / 2:
        time.sleep(0.1)
    held = []
    for _ in range(400):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), 2))
            sent["idle"] += 1
        except OSError:
            pass
    while time.monotonic() < end:
        time.sleep(0.1)


threads = [threading.Thread(target=gets), threading.Thread(target=idle)]
threads += [threading.Thread(target=sets, args=(n,)) for n in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("SENT", sent, flush=True)
"""


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of `pid`, in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(rest.split()[0]) * 1024
    return out


def _listening(port: int, proc: subprocess.Popen, limit: float = 180) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("rank 0 never listened")


def test_a_flood_from_another_uid_stays_within_the_stores_bound(tmp_path):
    tmp_path.chmod(0o755)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVCHECK_JOB_")}
    env.update(RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), ENVCHECK_JOB_SECRET=secrets.token_hex(32))
    log = open(tmp_path / "rank0.log", "w")  # noqa: SIM115 - closed with the process
    rank0 = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "verify", "job", "--timeout", str(TIMEOUT),
         "--json", str(tmp_path / "r0.json")], env=env, stdout=log, stderr=subprocess.STDOUT,
        cwd=tmp_path)
    try:
        _listening(port, rank0)
        time.sleep(2.0)  # rank 0 is in its roll call, waiting for rank 1
        before = _status(rank0.pid)
        flood = subprocess.run(
            [*AS_NOBODY, sys.executable, "-c", FLOODER, str(port), str(FLOOD)],
            env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, cwd="/",
            timeout=120)
        after = _status(rank0.pid)
        code = rank0.wait(TIMEOUT + 60)
    finally:
        if rank0.poll() is None:
            rank0.kill()
            rank0.wait()
    sent = flood.stdout
    assert "SENT" in sent, flood.stdout + flood.stderr
    bound = store.Limits.for_world(2).bound()
    grew = after["VmHWM"] - before["VmRSS"]
    print(f"rank 0: VmRSS {before['VmRSS'] >> 20} MiB before, VmHWM {after['VmHWM'] >> 20} "
          f"MiB after; grew {grew >> 20} MiB, bound {bound >> 20} MiB; flooder: {sent.strip()}")
    assert grew < bound, (grew, bound, sent)
    # rank 0 still ran its roll call to the end and reported what it saw
    assert code == 3, (tmp_path / "rank0.log").read_text()
    errors = [r["message"] for r in json.loads((tmp_path / "r0.json").read_text())["results"]
              if r["status"] == "error"]
    assert any(m.startswith("rank 1 (host unknown) did not arrive") for m in errors), errors
    warned = [r["message"] for r in json.loads((tmp_path / "r0.json").read_text())["results"]
              if r["check"] == "job.ranks.store"]
    assert warned and "the store would hold more than" in warned[0], warned
