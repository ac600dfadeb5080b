"""Real Dask clusters as subprocesses (`dask scheduler`, `dask worker`), and worker venvs.

Used by the verify cluster tests: schedulers and workers are separate interpreters, possibly
from other virtual environments, exactly as on a real cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.fetch import FetchFailed, fetch

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


@dataclass
class SubprocessCluster:
    """A scheduler and named workers, all child processes; stop() ends every one of them."""

    workdir: Path
    scheduler: subprocess.Popen
    address: str
    scheduler_file: Path
    tls: tuple[str, ...] = ()  # --tls-* arguments shared by every process
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)

    def add_worker(
        self,
        name: str,
        python: str = sys.executable,
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen:
        log = open(self.workdir / f"worker-{name}.log", "w")  # noqa: SIM115 - closed with proc
        proc = subprocess.Popen(
            [
                *dask_command(python, "worker"), self.address,
                "--name", name, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                "--host", "127.0.0.1", "--local-directory", str(self.workdir / f"w-{name}"),
                *self.tls, *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,  # not the repo: envcheck must not be importable by accident
            env={**os.environ, **(env or {})},
        )
        self.workers[name] = proc
        return proc

    def wait_for_workers(self, names: list[str], security: object = None) -> dict[str, str]:
        """name -> address once every named worker has registered.

        Asks the scheduler's `identity` over a raw comm rather than through a Client: the
        cluster may run a distributed our Client cannot talk to (tests/cluster/test_old_envs.py)."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            info = scheduler_identity(self.address, security)["workers"]
            by_name = {str(w.get("name", w.get("id"))): a for a, w in info.items()}
            if all(n in by_name for n in names):
                return {n: by_name[n] for n in names}
            for n in names:
                if self.workers[n].poll() is not None:
                    log = (self.workdir / f"worker-{n}.log").read_text()[-3000:]
                    raise RuntimeError(f"worker {n} exited:\n{log}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers {names} did not register; have {by_name}")
            time.sleep(0.1)

    def stop(self) -> None:
        # SIGKILL: a graceful close waits for running tasks (a test leaves one sleeping)
        procs = [*self.workers.values(), self.scheduler]
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
        for p in procs:
            p.wait()


def scheduler_identity(address: str, security: object = None) -> dict:
    """The scheduler's `identity` answer, over one raw comm (any distributed version)."""
    import asyncio

    from distributed.security import Security

    from envcheck.verify.cluster.probe import RawComm

    args = (security or Security()).get_connection_args("client")  # type: ignore[attr-defined]

    async def ask() -> dict:
        async with RawComm(address, args, START_TIMEOUT) as scheduler:
            return await scheduler.call({"op": "identity"})

    return asyncio.run(ask())


def dask_command(python: str, what: str) -> list[str]:
    """How the environment of ``python`` starts a scheduler or worker: `dask scheduler` where
    that environment ships the `dask` command (distributed >= 2022.10), else `dask-scheduler`;
    the module itself where neither is there (linked venvs have no scripts of their own)."""
    bindir = Path(python).parent
    if python != sys.executable and (bindir / "dask").exists():
        return [str(bindir / "dask"), what]
    if python != sys.executable and (bindir / f"dask-{what}").exists():
        return [str(bindir / f"dask-{what}")]
    return [python, "-m", f"distributed.cli.dask_{what}"]


def start_cluster(
    workdir: Path, tls: tuple[str, ...] = (), python: str = sys.executable
) -> SubprocessCluster:
    """A `dask scheduler` on a free port of 127.0.0.1, ready when its scheduler file appears."""
    workdir.mkdir(parents=True, exist_ok=True)
    sched_file = workdir / "scheduler.json"
    log = open(workdir / "scheduler.log", "w")  # noqa: SIM115 - closed with the process
    protocol = ("--protocol", "tls") if tls else ()
    proc = subprocess.Popen(
        [
            *dask_command(python, "scheduler"),
            "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
            "--scheduler-file", str(sched_file), *protocol, *tls,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if sched_file.exists():
            try:
                address = json.loads(sched_file.read_text())["address"]
                break
            except (ValueError, KeyError):
                pass  # being written
        if proc.poll() is not None:
            raise RuntimeError((workdir / "scheduler.log").read_text()[-3000:])
        if time.monotonic() > deadline:
            proc.kill()
            raise TimeoutError("scheduler did not start")
        time.sleep(0.05)
    return SubprocessCluster(workdir, proc, address, sched_file, tls)


# distributed's own comm timeouts (30 s by default) raised far past HANG: a test proving that
# envcheck's --timeout holds runs envcheck with these, so only --timeout ends its wait in HANG
DASK_TIMEOUTS_PAST_HANG = {
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "600",
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": "600",
}


def run_envcheck(*args: str, timeout: float = 120.0, cwd: Path | None = None,
                 env: dict[str, str] | None = None):
    """`python -m envcheck ...` as a user runs it, ``env`` added to this process's environment;
    returns (CompletedProcess, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
    )
    return proc, time.monotonic() - t0


def linked_venv(path: Path, own_packages: tuple[str, ...] = ()) -> str:
    """A venv that sees this environment's packages but *not* envcheck; returns its python.

    A .pth file adds our site-packages to its path; .pth files *inside* that directory (the
    editable install of envcheck among them) are not processed there, so envcheck does not
    import. `own_packages` are installed into the venv itself and shadow ours.
    """
    if not (path / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
        site = Path(
            subprocess.run(
                [str(path / "bin" / "python"), "-c",
                 "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                check=True, capture_output=True, text=True,
            ).stdout.strip()
        )
        (site / "_envcheck_tests_link.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        if own_packages:
            uv_install(str(path / "bin" / "python"), own_packages, no_deps=True)
    return str(path / "bin" / "python")


def standalone_venv(path: Path, packages: tuple[str, ...]) -> str:
    """A venv with only `packages` (from PyPI or uv's cache); returns its python."""
    python = path / "bin" / "python"
    if not python.exists():
        uv = Path(sys.executable).parent / "uv"
        try:
            fetch([str(uv), "venv", "-q", "--python", sys.executable, str(path)], "uv venv",
                  timeout=120)
        except FetchFailed as e:
            pytest.fail(str(e), pytrace=False)
        uv_install(str(python), packages)
    return str(python)


def uv_install(python: str, packages: tuple[str, ...], no_deps: bool = False) -> None:
    uv = Path(sys.executable).parent / "uv"
    cmd = [str(uv), "pip", "install", "-q", "--python", python, *packages]
    if no_deps:
        cmd.append("--no-deps")
    try:
        fetch(cmd, f"uv pip install {' '.join(packages)}", timeout=300)
    except FetchFailed as e:  # PyPI unreachable three times and nothing cached
        pytest.fail(str(e), pytrace=False)
