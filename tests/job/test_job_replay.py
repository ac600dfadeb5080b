"""Messages recorded from one launch of verify job and replayed into a later one, by a process
of uid `nobody` that does not hold the job's secret.

A first launch (two real ranks, started by hand with RANK/WORLD_SIZE and one
ENVCHECK_JOB_SECRET) passes while a recorder as uid nobody reads every signed value it can
reach in the rendezvous store: rank 0's hello, both arrivals, the roll call, the phase markers,
the passing verdict. Later launches reuse the same secret, run id, MASTER_ADDR:PORT and world
size: all that a signature covered before nonces bound it to one launch.

- into a real launch whose rank 0 FAILs: the recorder writes every recorded value into the
  store, over and over; rank 1 must not exit 0.
- a squatter: the stranger takes MASTER_PORT first, serves a store of its own and replays
  hello, roll call and verdict; rank 0 never runs. Rank 1 must exit non-zero, naming the
  replayed roll call.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.nobody import AS_NOBODY
from tests.support.ports import free_port
from tests.support.ranks import log_of, logged_rank, stop, wait_all

pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.slow

ENVCHECK = [sys.executable, "-m", "envcheck"]  # the code under test, not an installed script
TIMEOUT = 15  # verify job --timeout of the later launches
PREFIX = "envcheck-job/run/"  # ranks started by hand: no run id
KEYS = ["hello", "arrived/0", "arrived/1", "roll", "phase/gather/0", "phase/gather/1",
        "phase/allreduce/0", "phase/allreduce/1", "verdict"]
SECRET = secrets.token_hex(32)

# The stranger runs as uid nobody (AS_NOBODY), without the secret.
# record: a client of the launch's store; once the verdict is there, every key it can read,
# printed as one JSON line of base64 values. inject: a client writing `recorded` into the
# store over and over, from when both ranks arrived (a replayed arrival before that only
# stops the run early: rank 0 refuses it). squat: a store of its own on the port, holding
# `recorded`, re-set over and over (a rank that wrote there finds the replay again).
STRANGER = r"""
import base64, datetime, json, os, socket, sys, time
from torch.distributed import TCPStore

addr, port, mode, prefix, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], \
    json.loads(sys.argv[5])
recorded = json.loads(sys.stdin.read() or "{}")
td = datetime.timedelta(seconds=5)
print("ready uid", os.getuid(), flush=True)
end = time.monotonic() + 240  # killed by the test before that
if mode == "squat":
    store = TCPStore(addr, port, None, True, td, wait_for_workers=False)
else:  # once something listens there (TCPStore's own connect backs off for seconds)
    while True:
        try:
            socket.create_connection((addr, port), 0.5).close()
            break
        except OSError:
            time.sleep(0.02)
    store = TCPStore(addr, port, None, False, td, wait_for_workers=False)
print("connected", flush=True)
if mode == "record":
    store.wait([prefix + "verdict"], datetime.timedelta(seconds=200))
    got = {}
    for k in ["verdict"] + keys:
        if store.check([prefix + k]):
            got[k] = base64.b64encode(store.get(prefix + k)).decode()
    print("RECORDED " + json.dumps(got), flush=True)
    sys.exit(0)
values = {prefix + k: base64.b64decode(v) for k, v in recorded.items()}
if mode == "inject":  # once both ranks are in: the replay then meets the run's every phase
    store.wait([prefix + "arrived/0", prefix + "arrived/1"], datetime.timedelta(seconds=200))
while time.monotonic() < end:
    for k, v in values.items():
        store.set(k, v)
    time.sleep(0.02)
"""


def _stranger(tmp: Path, port: int, mode: str, recorded: dict[str, str],
              keys: list[str] = KEYS) -> subprocess.Popen:
    out = open(tmp / f"stranger-{mode}.log", "w")  # noqa: SIM115 - closed with the process
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "TORCH_CPP_LOG_LEVEL": "ERROR"}
    p = subprocess.Popen([*AS_NOBODY, sys.executable, "-c", STRANGER, "127.0.0.1", str(port),
                          mode, PREFIX, json.dumps(keys)],
                         env=env, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                         cwd="/", text=True)
    p.stdin.write(json.dumps(recorded))
    p.stdin.close()
    end = time.monotonic() + 180
    while "ready uid 65534" not in (tmp / f"stranger-{mode}.log").read_text():
        assert p.poll() is None and time.monotonic() < end, log_of(tmp, f"stranger-{mode}")
        time.sleep(0.1)
    return p


def _rank(tmp: Path, port: int, rank: int, *extra: str, tag: str = "") -> subprocess.Popen:
    return logged_rank(ENVCHECK, tmp, port, rank, 2, "--timeout", str(TIMEOUT), *extra,
                       env={"ENVCHECK_JOB_SECRET": SECRET}, tag=tag)


def _wait(procs: list[subprocess.Popen], limit: float = 240) -> list[int]:
    return wait_all(procs, limit)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[int, dict[str, str]]:
    """(the port, every value uid nobody recorded from a passing first launch on it)."""
    tmp = tmp_path_factory.mktemp("first")
    tmp.chmod(0o755)
    port = free_port()
    recorder = _stranger(tmp, port, "record", {})
    try:
        codes = _wait([_rank(tmp, port, 0), _rank(tmp, port, 1)])
        assert codes == [0, 0], (codes, log_of(tmp, "rank0"), log_of(tmp, "rank1"))
        assert _wait([recorder], 30) == [0], log_of(tmp, "stranger-record")
    finally:
        stop(recorder)
    line = next(x for x in log_of(tmp, "stranger-record").splitlines()
                if x.startswith("RECORDED "))
    got = json.loads(line.removeprefix("RECORDED "))
    assert {"hello", "arrived/1", "roll", "verdict"} <= set(got), got
    verdict = json.loads(base64.b64decode(got["verdict"]).partition(b" ")[2])
    assert verdict["code"] == 0, verdict  # a passing verdict, signed with the job's secret
    return port, got


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


REFUSALS = ("a roll call without this rank's nonce was refused",
            "not signed with this job's secret for this launch, phase and rank",
            "is claimed by a process without this job's secret",
            "is claimed twice")


@pytest.mark.parametrize("what", ["everything", "verdict"])
def test_a_recorded_run_replayed_into_a_later_failing_run_never_passes_rank_1(
        recording, tmp, what):
    port, recorded = recording
    replayed = recorded if what == "everything" else {"verdict": recorded["verdict"]}
    injector = _stranger(tmp, port, "inject", replayed)
    try:
        # rank 0 FAILs this time: it expects a GPU this machine does not have
        codes = _wait([_rank(tmp, port, 0, "--expect-gpus", "1"),
                       _rank(tmp, port, 1, "--debug")])
    finally:
        stop(injector)
    assert "connected" in log_of(tmp, "stranger-inject")
    rank1 = log_of(tmp, "rank1")
    assert codes[0] in (2, 3) and codes[1] != 0, (codes, log_of(tmp, "rank0"), rank1)
    assert "Traceback" not in rank1
    # rank 1 names the replay it refused, or took rank 0's own verdict (not the recorded pass)
    took = f"rank 1/2: verify job: {'fail' if codes[0] == 2 else 'error'}" in rank1
    # or, the injector's writes having broken its store connection, rank 1 ended in error
    # naming rank 0's store as gone (exit 3): never the recorded pass
    lost = "then the store stopped answering" in rank1 and codes[1] == 3
    assert any(r in rank1 for r in REFUSALS) or (took and codes[1] == codes[0]) or lost, rank1


def test_a_squatter_replaying_hello_roll_and_verdict_never_passes_rank_1(recording, tmp):
    port, recorded = recording
    replayed = {k: v for k, v in recorded.items() if k in ("hello", "roll", "verdict")}
    squatter = _stranger(tmp, port, "squat", replayed)
    try:
        codes = _wait([_rank(tmp, port, 1, "--debug")])  # rank 0 never runs
    finally:
        stop(squatter)
    rank1 = log_of(tmp, "rank1")
    assert codes == [3], (codes, rank1)
    lines = rank1.strip().splitlines()
    assert len(lines) == 1, rank1
    assert lines[0].startswith("envcheck verify job: rank 1/2: the roll call: a roll call "
                               "without this rank's nonce was refused: it was recorded from "
                               "another launch and replayed"), rank1
