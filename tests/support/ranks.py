"""Ranks of `envcheck verify job` started by hand, as pdsh or ssh loops start them
(RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from tests.support.ports import free_port

SLOW_MODULE = "envcheck_test_slow"  # a module whose import sleeps a minute


def start_ranks(envcheck: list[str], world: int, ranks: range, tmp_path: Path, timeout: int,
                slow: int = -1) -> tuple[int, list[subprocess.Popen]]:
    """Ranks `ranks` of `world` as separate processes in their own sessions (an import probe
    goes with its rank), each writing r{rank}.json and r{rank}.xml; rank `slow` imports a
    module that sleeps a minute, so the others wait for it inside the facts gather. The
    rendezvous port and the processes."""
    (tmp_path / f"{SLOW_MODULE}.py").write_text("import time\ntime.sleep(60)\n")
    port = free_port()
    path = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world), "PYTHONPATH": path}
    procs = [subprocess.Popen(
        [*envcheck, "verify", "job", "--timeout", str(timeout),
         "--json", str(tmp_path / f"r{r}.json"), "--junit", str(tmp_path / f"r{r}.xml"),
         *(["--import", SLOW_MODULE] if r == slow else [])],
        env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        for r in ranks]
    return port, procs


def arrived(port: int, rank: int) -> None:
    """Wait until `rank` answered the roll call (its key in rank 0's store)."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", port, None, False, timedelta(seconds=240))
    store.wait([f"envcheck-job/run/arrived/{rank}"], timedelta(seconds=240))


def rank_env(port: int, rank: int, world: int, addr: str = "127.0.0.1",
             **extra: str) -> dict[str, str]:
    """This environment as rank ``rank`` of ``world`` on ``addr:port`` sees it, started by hand;
    its ENVCHECK_JOB_* variables left out, ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVCHECK_JOB_")}
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR=addr,
               MASTER_PORT=str(port), **extra)
    return env


def logged_rank(envcheck: list[str], tmp: Path, port: int, rank: int, world: int, *argv: str,
                env: dict[str, str] | None = None, addr: str = "127.0.0.1",
                tag: str = "") -> subprocess.Popen:
    """``envcheck verify job ARGV`` in ``tmp`` as rank ``rank`` (rank_env, ``env`` on top), its
    output in tmp/rank{rank}{tag}.log."""
    out = open(tmp / f"rank{rank}{tag}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([*envcheck, "verify", "job", *argv],
                            env=rank_env(port, rank, world, addr, **(env or {})), stdout=out,
                            stderr=subprocess.STDOUT, cwd=tmp)


def wait_all(procs: list[subprocess.Popen], limit: float) -> list[int]:
    """Their exit codes, all within ``limit`` seconds; one still running then is killed."""
    end, codes = time.monotonic() + limit, []
    for p in procs:
        try:
            codes.append(p.wait(max(end - time.monotonic(), 0.1)))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    return codes


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.kill()
    p.wait()


def log_of(tmp: Path, name: str) -> str:
    return (tmp / f"{name}.log").read_text(errors="replace")


def reached(port: int, phase: str, rank: int) -> None:
    """Wait until `rank` marked reaching `phase` ("gather", "allreduce") in rank 0's store."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", port, None, False, timedelta(seconds=240))
    store.wait([f"envcheck-job/run/phase/{phase}/{rank}"], timedelta(seconds=240))
