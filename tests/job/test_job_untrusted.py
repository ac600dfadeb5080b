"""verify job against processes that are not the launch's: real ranks (started by hand with
RANK/WORLD_SIZE, as pdsh or ssh loops do) and a stranger running as uid `nobody` that speaks
to their rendezvous store. The stranger claims the missing rank and sends a pickle that would
run a command, or writes a verdict of its own; a second process of the job's own uid claims a
rank that is taken. The store must listen on MASTER_ADDR only."""

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

from tests.support.nobody import AS_NOBODY
from tests.support.ports import free_port
from tests.support.ranks import log_of, logged_rank, rank_env, stop, wait_all

pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
ENVCHECK = [str(BIN / "envcheck")]
TIMEOUT = 20  # verify job --timeout (ranks start slowly on busy cores)
PREFIX = "envcheck-job/run/"  # RANK/WORLD_SIZE by hand: no run id

# The stranger: a TCPStore client of the ranks' store, as uid nobody, without the job's secret.
# "rank2": claims rank 2 as envcheck's roll call once read it, then joins the gloo group as
# rank 2 and all-gathers a pickle whose unpickling touches MARKER. "verdict": writes a passing
# verdict (unsigned, and behind a made-up MAC) over and over.
STRANGER = r"""
import datetime, json, os, sys, time
import torch.distributed as dist
from torch.distributed import TCPStore

addr, port, mode, marker, prefix = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
print("ready", flush=True)
end = time.monotonic() + 240  # killed by the test before that
while True:
    try:
        store = TCPStore(addr, port, None, False, datetime.timedelta(seconds=5),
                         wait_for_workers=False)
        break
    except Exception:
        if time.monotonic() > end:
            raise
        time.sleep(0.1)
print("connected as uid", os.getuid(), flush=True)


class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + marker,))


if mode == "rank2":
    record = json.dumps({"host": "stranger", "pid": os.getpid(), "local_rank": 2, "world": 3})
    store.set(prefix + "arrived/2", record)
    dist.init_process_group("gloo", store=dist.PrefixStore(prefix + "pg/", store), rank=2,
                            world_size=3, timeout=datetime.timedelta(seconds=30))
    out = [None] * 3
    dist.all_gather_object(out, Payload())
else:
    verdict = {"code": 0, "line": "verify job: pass"}
    while time.monotonic() < end:
        store.set(prefix + "verdict", json.dumps(verdict))
        time.sleep(0.02)
        store.set(prefix + "verdict", "0" * 64 + " " + json.dumps(verdict))
        time.sleep(0.02)
"""


SECRET = secrets.token_hex(32)


def _rank(tmp: Path, port: int, rank: int, world: int, *extra: str,
          addr: str = "127.0.0.1", tag: str = "", secret: str = "") -> subprocess.Popen:
    """A rank writing rank{rank}{tag}.json; its secret: `secret` exported, else the secret file
    rank 0 writes."""
    return logged_rank(ENVCHECK, tmp, port, rank, world, "--timeout", str(TIMEOUT), "--json",
                       str(tmp / f"rank{rank}{tag}.json"), *extra, env=_secret(tmp, secret),
                       addr=addr, tag=tag)


def _secret(tmp: Path, secret: str) -> dict[str, str]:
    return {"ENVCHECK_JOB_SECRET_DIR": str(tmp / "secrets"),
            **({"ENVCHECK_JOB_SECRET": secret} if secret else {})}


def _stranger(tmp: Path, port: int, mode: str, marker: Path) -> subprocess.Popen:
    # uid nobody (AS_NOBODY) can read the test's venv and so a secret file too: the ranks it
    # attacks get their secret from ENVCHECK_JOB_SECRET, which another uid cannot read
    # (/proc/PID/environ needs ptrace access, which no capability of the stranger gives)
    out = open(tmp / f"stranger-{mode}.log", "w")  # noqa: SIM115
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "TORCH_CPP_LOG_LEVEL": "ERROR"}
    return subprocess.Popen(
        [*AS_NOBODY, sys.executable, "-c", STRANGER, "127.0.0.1", str(port), mode, str(marker),
         PREFIX], env=env, stdout=out, stderr=subprocess.STDOUT, cwd="/")


def _ready(tmp: Path, log: str, limit: float = 180) -> None:
    """Wait until the stranger has imported torch and is polling for the store: the ranks'
    timeouts then start with the stranger already there, however slow its start."""
    end = time.monotonic() + limit
    while "ready" not in (tmp / log).read_text():
        assert time.monotonic() < end, (tmp / log).read_text()
        time.sleep(0.2)


def _errors(path: Path) -> list[str]:
    return [r["message"] for r in json.loads(path.read_text())["results"]
            if r["status"] == "error"]


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)  # uid nobody reaches its marker's directory (it never writes there)
    return tmp_path


def _two_of_three_beside(tmp: Path, role: str, marker: Path) -> list[int]:
    """Ranks 0 and 1 of a launch of 3 (with its secret) while a stranger as uid nobody plays
    `role` on their port: the two ranks' exit codes."""
    port = free_port()
    stranger = _stranger(tmp, port, role, marker)
    _ready(tmp, f"stranger-{role}.log")
    ranks = [_rank(tmp, port, 0, 3, secret=SECRET), _rank(tmp, port, 1, 3, "--debug",
                                                          secret=SECRET)]
    try:
        return wait_all(ranks, TIMEOUT * 3 + 30)
    finally:
        stop(stranger)


def test_a_stranger_claiming_a_rank_runs_nothing_and_is_named(tmp):
    marker = tmp / "marker"
    codes = _two_of_three_beside(tmp, "rank2", marker)
    stranger_log = log_of(tmp, "stranger-rank2")
    assert "connected as uid 65534" in stranger_log, stranger_log
    assert not marker.exists()
    assert codes[0] == 3 and codes[1] == 3, (codes, log_of(tmp, "rank0"), log_of(tmp, "rank1"))
    errors = _errors(tmp / "rank0.json")
    assert any(m.startswith("rank 2 was claimed by a process without this job's secret "
                            "(unauthenticated") for m in errors), errors
    rank1 = log_of(tmp, "rank1")
    assert "rank 2 was claimed by a process without this job's secret" in rank1, rank1


def test_a_forged_verdict_is_never_taken(tmp):
    # rank 2 never comes: rank 0 fails the roll call; the stranger says pass, over and over
    codes = _two_of_three_beside(tmp, "verdict", tmp / "marker")
    assert "connected as uid 65534" in log_of(tmp, "stranger-verdict")
    assert codes[0] == 3 and (tmp / "rank0.json").exists(), log_of(tmp, "rank0")
    assert any(m.startswith("rank 2 (host unknown) did not arrive")
               for m in _errors(tmp / "rank0.json"))
    assert codes[1] != 0, log_of(tmp, "rank1")
    rank1 = log_of(tmp, "rank1")
    assert ("rank 2 (host unknown) did not arrive" in rank1
            or "a value that is not this launch's was refused" in rank1), rank1


def test_a_second_claimant_of_a_rank_is_named(tmp):
    port = free_port()
    # both claimants wait for rank 0 (its secret file, its hello): both are there as it starts
    ones = [_rank(tmp, port, 1, 2, "--debug"), _rank(tmp, port, 1, 2, "--debug", tag="again")]
    time.sleep(3.0)
    rank0 = _rank(tmp, port, 0, 2)
    codes = wait_all([rank0, *ones], TIMEOUT * 3 + 30)
    logs = {n: log_of(tmp, n) for n in ("rank0", "rank1", "rank1again")}
    assert codes == [3, 3, 3], (codes, logs)
    errors = _errors(tmp / "rank0.json")
    assert any(m.startswith("rank 1 is claimed twice: by rank 1 (host ") for m in errors), errors
    loser = [n for n in ("rank1", "rank1again") if "rank 1 is claimed twice: by host " in logs[n]]
    assert len(loser) == 1, logs


def _listening(port: int) -> list[str]:
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[3] for line in out.splitlines() if line.strip()]


def _own_address() -> str:
    """An address of this host other than loopback ('' when it has none)."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        return line.split()[3].split("/")[0]
    return ""


@pytest.mark.parametrize("where", ["loopback", "interface"])
def test_the_store_listens_on_master_addr_only(tmp, where):
    addr = "127.0.0.1" if where == "loopback" else _own_address()
    if not addr:
        pytest.skip("this host has no address but loopback")
    port = free_port()
    rank0 = _rank(tmp, port, 0, 2, addr=addr)  # rank 1 never comes: rank 0 waits TIMEOUT
    try:
        end, seen = time.monotonic() + TIMEOUT, []
        while not seen and time.monotonic() < end and rank0.poll() is None:
            seen = _listening(port)
            time.sleep(0.2)
    finally:
        stop(rank0)
    assert seen == [f"{addr}:{port}"], (seen, log_of(tmp, "rank0"))


def test_the_secret_file_is_the_job_uids_alone(tmp):
    from envcheck.verify.job import auth

    env = {auth.SECRET_DIR_ENV: str(tmp / "secrets")}
    made = auth.create_file(env, "env//127.0.0.1/29500")
    path = Path(made.path)
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert auth.read_file(env, "env//127.0.0.1/29500") == auth.Secret(made.key, made.path)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat",
                        str(path)], capture_output=True, text=True)
    assert p.returncode != 0 and "Permission denied" in p.stderr, p
    path.chmod(0o644)
    with pytest.raises(auth.AuthError, match="must be a regular file of uid 0 with mode 0600"):
        auth.read_file(env, "env//127.0.0.1/29500")


# A rank of the job (it holds the secret) whose facts are not envcheck's: its collector is
# replaced before `envcheck verify job` runs.
BAD_RANK = r"""
import sys
from envcheck.cli import main
from envcheck.verify.job import run

kind = sys.argv[1]
own = run.JobRun._collect


def collect(self):
    if kind in ("another", "huge"):  # its real facts, claiming rank 0's number, or 10**4000
        got = own(self)
        got["rank"]["rank"] = 0 if kind == "another" else 10**4000
        return got
    if kind == "oversize":
        return {"rank": {}, "facts": {"host": "x" * (5 << 20)}}
    return {"rank": {"rank": "one"}, "facts": {"gpus": 5}}


run.JobRun._collect = collect
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(("kind", "says"), [
    ("malformed", "facts do not match envcheck's model (rank.rank: str, not int)"),
    ("oversize", "more than the 4194304 allowed"),
    ("another", "its facts claim rank 0, but it sent them as rank 1 of 2"),
    ("huge", "its facts claim rank a number of 4001 digits, but it sent them as rank 1 of 2"),
])
def test_a_ranks_unusable_facts_are_an_error_naming_it(tmp, kind, says):
    port = free_port()
    rank0 = _rank(tmp, port, 0, 2, secret=SECRET)
    out = open(tmp / "rank1.log", "w")  # noqa: SIM115
    rank1 = subprocess.Popen(
        [sys.executable, "-c", BAD_RANK, kind, "verify", "job", "--timeout", str(TIMEOUT)],
        env=rank_env(port, 1, 2, **_secret(tmp, SECRET)), stdout=out, stderr=subprocess.STDOUT)
    codes = wait_all([rank0, rank1], TIMEOUT * 3 + 30)
    logs = log_of(tmp, "rank0") + log_of(tmp, "rank1")
    assert codes == [3, 3] and "Traceback" not in logs, (codes, logs)
    errors = _errors(tmp / "rank0.json")
    assert any(m.startswith(f"rank 1 (host {socket.gethostname()}, pid {rank1.pid}) sent facts "
                            "that cannot be used: ") and says in m for m in errors), errors
