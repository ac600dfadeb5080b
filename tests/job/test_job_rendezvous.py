"""verify job's rendezvous on a derived port (no MASTER_PORT): real sockets, a real TCPStore,
two ranks as threads of this process calling group.connect as `envcheck verify job` does.

Rank 0 listens on the first of the launch's candidate ports free on this host; the other rank
asks the candidates in turn and must pass over whatever else holds one: a plain listener, a
server that speaks another protocol or never speaks, another launch's rank 0.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from envcheck.verify.job import group as grp
from envcheck.verify.job import roll
from envcheck.verify.job.launch import CANDIDATES, LaunchInfo, launch_info

pytest.importorskip("torch.distributed")


def _env(job: str, rank: int, **extra: str) -> dict[str, str]:
    """An srun step's rank `rank` of 2 on this host (Slurm's variables, no MASTER_PORT)."""
    return {"SLURM_JOB_ID": job, "SLURM_STEP_ID": "0", "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank), "SLURM_NODEID": "0", "SLURM_STEP_NUM_TASKS": "2",
            "SLURM_STEP_NODELIST": "localhost", "SLURM_STEP_TASKS_PER_NODE": "2",
            "MASTER_ADDR": "127.0.0.1", **extra}


@pytest.fixture(autouse=True)
def _secret_dir(tmp_path, monkeypatch):
    """Rank 0's secret files in the test's own directory, not the user's cache."""
    monkeypatch.delenv("ENVCHECK_JOB_SECRET", raising=False)
    monkeypatch.setenv("ENVCHECK_JOB_SECRET_DIR", str(tmp_path / "secrets"))


def _free(port: int) -> bool:
    try:
        with socket.create_server(("", port)):
            return True
    except OSError:
        return False


def _launch() -> tuple[str, tuple[int, ...]]:
    """A job id whose candidate ports are all free here now, and those ports."""
    for _ in range(100):
        job = str(uuid.uuid4().int % 10**9)
        ports = launch_info(_env(job, 0)).port_candidates
        if all(_free(p) for p in ports):
            return job, ports
    raise AssertionError("no job id with all its candidate ports free")


@contextmanager
def _held(port: int, speak: str = "") -> Iterator[list[int]]:
    """Something else on `port`: a listener that never accepts (speak ""), or a server that
    accepts and sends garbage ("garbage"), an HTTP answer and closes ("http"), or nothing
    ("silent"). Yields the list of connections it accepted (grows while held)."""
    server = socket.create_server(("", port))
    accepted: list[int] = []
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(1)
            conns.append(conn)
            if speak == "garbage":
                conn.sendall(b"\xff\xfe\x00SSH-2.0-OpenSSH_9.6 " * 8)  # no newline, kept open
            elif speak == "http":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    if speak:
        thread.start()
    try:
        yield accepted
    finally:
        stop.set()
        if speak:
            thread.join(5)
        for c in conns:
            c.close()
        server.close()


def _connect_all(launches: list[LaunchInfo], timeout: float,
                 late: float = 0.5) -> list[grp.Rendezvous | grp.GroupError]:
    """connect() on every launch at once, each in its thread, rank 0 `late` seconds after the
    others (they must keep asking); what each returned or raised, in the order given."""
    out: list[grp.Rendezvous | grp.GroupError | None] = [None] * len(launches)

    def run(i: int) -> None:
        if launches[i].rank == 0:
            time.sleep(late)
        try:
            out[i] = grp.connect(launches[i], timeout)
        except grp.GroupError as e:
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(launches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 15)
    assert all(o is not None for o in out), out
    return out  # type: ignore[return-value]


@contextmanager
def _rendezvous(job: str, timeout: float = 30.0) -> Iterator[list[grp.Rendezvous]]:
    got = _connect_all([launch_info(_env(job, r)) for r in (1, 0)], timeout)
    rvs = [g for g in got if isinstance(g, grp.Rendezvous)]
    try:
        assert len(rvs) == 2, got
        yield sorted(rvs, key=lambda rv: rv.launch.rank)
    finally:
        for rv in rvs:
            rv.stop()


def _works(rv0: grp.Rendezvous, rv1: grp.Rendezvous) -> None:
    """The two ranks share one store: rank 1's roll call and heartbeat reach rank 0."""
    grp.arrive(rv0)
    grp.arrive(rv1)
    assert roll.roll_call(rv0, 10) == []
    assert rv0.arrived[1]["local_rank"] == 1
    grp.watch_beats(rv0)
    deadline = time.monotonic() + 10
    while rv0.beats[1][0] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rv0.beats[1][0] > 0  # rank 1's heartbeat thread found the store on its port


def test_the_ranks_meet_on_the_second_candidate_when_the_first_is_in_use():
    job, ports = _launch()
    with _held(ports[0]), _rendezvous(job) as (rv0, rv1):
        _works(rv0, rv1)
        for rv in (rv0, rv1):
            assert rv.launch.master_port == ports[1]
            assert rv.launch.port_source == (
                f"derived from the launch's ids (MASTER_PORT unset); candidate 2 of "
                f"{CANDIDATES}, store on port {rv0.port}")
        assert rv1.port == rv0.port and rv0.port not in ports
        assert not _free(ports[1])  # rank 0 answers there while the rendezvous lasts
    deadline = time.monotonic() + 5
    while not _free(ports[1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _free(ports[1])  # and lets it go when it stops


def test_stop_joins_the_threads_that_call_into_the_store():
    """A daemon thread left inside a torch store call when Python exits dies by pthread_exit
    through pybind11's noexcept GIL guard: std::terminate, exit 134 after a passing verdict.
    stop() returns only once the heartbeat threads of both ranks have ended."""
    job, _ = _launch()
    with _rendezvous(job) as (rv0, rv1):
        _works(rv0, rv1)
        threads = [t for rv in (rv0, rv1) for t in rv._threads]
        assert sorted(t.name for t in threads) == ["envcheck-beats", "envcheck-heartbeat"]
        assert all(t.is_alive() for t in threads)
        rv1.stop()
        rv0.stop()
        assert [t.name for t in threads if t.is_alive()] == []


def test_the_first_free_candidate_is_the_first_derived_port():
    job, ports = _launch()
    with _rendezvous(job) as (rv0, rv1):
        _works(rv0, rv1)
        assert rv0.launch.master_port == rv1.launch.master_port == ports[0]
        assert "candidate 1 of" in rv1.launch.port_source


@pytest.mark.parametrize("speak", ["garbage", "http", "silent"])
def test_a_foreign_server_on_a_candidate_does_not_confuse_the_ranks(speak):
    job, ports = _launch()
    with _held(ports[0], speak) as accepted, _rendezvous(job) as (rv0, rv1):
        _works(rv0, rv1)
        assert rv0.launch.master_port == rv1.launch.master_port == ports[1]
        assert accepted  # rank 1 did ask the foreign server, and passed it over


def test_another_launchs_rank_0_on_a_candidate_is_passed_over():
    job, ports = _launch()
    other_job, _ = _launch()
    # the other launch's rank 0, its first candidate on ours: a collision of two launches
    other = launch_info(_env(other_job, 0))
    other = dataclasses.replace(other, master_port=ports[0], port_candidates=(ports[0],))
    held = grp.connect(other, 10)
    try:
        assert held.launch.master_port == ports[0]
        with _rendezvous(job) as (rv0, rv1):
            _works(rv0, rv1)
            assert rv0.launch.master_port == rv1.launch.master_port == ports[1]
            assert not held.has("arrived/1")  # rank 1 signed in with its own rank 0 only
    finally:
        held.stop()


def test_every_candidate_in_use_is_one_line_naming_them_all():
    job, ports = _launch()
    with ExitStack() as stack:
        for p in ports:
            stack.enter_context(_held(p))
        rank0, rank1 = _connect_all([launch_info(_env(job, r)) for r in (0, 1)], 2.0, late=0)
    listed = ", ".join(str(p) for p in ports)
    assert isinstance(rank0, grp.GroupError), rank0
    assert str(rank0) == (
        f"rank 0 cannot serve the rendezvous on 127.0.0.1: ports {listed} (derived from the "
        "launch's ids (MASTER_PORT unset)) are all in use: set MASTER_PORT to a free port for "
        "every rank")
    assert isinstance(rank1, grp.GroupError), rank1
    message = str(rank1)
    assert "\n" not in message
    assert message.startswith(
        f"rank 1: rank 0's rendezvous at 127.0.0.1 did not answer within 2 s on any of ports "
        f"{listed} (derived from the launch's ids (MASTER_PORT unset)): ")
    assert f"{ports[0]}: no answer" in message  # a listener that never accepts


def test_master_port_in_use_is_that_port_only_and_named():
    job, ports = _launch()
    with socket.create_server(("", 0)) as held:
        port = held.getsockname()[1]
        launch = launch_info(_env(job, 0, MASTER_PORT=str(port)))
        assert (launch.master_port, launch.port_source, launch.port_candidates) == (
            port, "MASTER_PORT", ())
        with pytest.raises(grp.GroupError) as e:
            grp.connect(launch, 2.0)
    message = str(e.value)
    assert message.startswith(
        f"rank 0 cannot serve the rendezvous on 127.0.0.1:{port} (MASTER_PORT): "
        "OSError: [Errno 98] Address already in use")
    assert "\n" not in message
    assert all(str(p) not in message for p in ports)  # no derived candidate was tried


def test_master_port_free_serves_the_store_on_it():
    job, _ = _launch()
    with socket.create_server(("", 0)) as s:
        port = s.getsockname()[1]
    got = _connect_all([launch_info(_env(job, r, MASTER_PORT=str(port))) for r in (1, 0)], 20)
    rv1, rv0 = got
    assert isinstance(rv0, grp.Rendezvous) and isinstance(rv1, grp.Rendezvous), got
    try:
        _works(rv0, rv1)
        assert rv0.port == rv1.port == rv0.launch.master_port == port
        assert rv0.launch.port_source == "MASTER_PORT"
    finally:
        rv0.stop()
        rv1.stop()


def test_a_rendezvous_signed_with_another_secret_is_not_joined(monkeypatch):
    """Rank 0 of this launch, but its hello signed with another secret (another job's, or a
    stranger's): the other rank names the rendezvous as not this job's."""
    job, _ = _launch()
    launches = [launch_info(_env(job, r)) for r in (0, 1)]
    monkeypatch.setenv("ENVCHECK_JOB_SECRET", "a" * 64)
    rv0 = grp.connect(launches[0], 5.0)
    try:
        monkeypatch.setenv("ENVCHECK_JOB_SECRET", "b" * 64)
        with pytest.raises(grp.GroupError) as e:
            grp.connect(launches[1], 3.0)
    finally:
        rv0.stop()
    assert "a rendezvous not signed with this job's secret" in str(e.value), e.value


def test_the_watchdog_names_the_stuck_rank_and_hands_over_the_report(capsys):
    """What rank 0 does when its watchdog fires (before os._exit): the stuck rank (its
    heartbeat stopped) named with host and pid, in one line on stderr and in the report."""
    from envcheck.verify.expect_options import expectations_from_options
    from envcheck.verify.expectations import ExpectOptions
    from envcheck.verify.job.phase import Phase, Step
    from envcheck.verify.job.run import JobRun

    job_id, _ = _launch()
    with _rendezvous(job_id) as (rv0, rv1):
        _works(rv0, rv1)
        rv1.stop()  # rank 1's heartbeat stops, as a SIGSTOPped rank's does
        time.sleep(grp.STALE + 1)
        got: list = []
        run = JobRun(rv0.launch, expectations_from_options(ExpectOptions()), 5.0,
                     on_abort=got.append)
        run.rv = rv0
        try:
            run._fired(Step(Phase.GATHER, limit="--timeout 5 s"))
        finally:
            run.watchdog.stop()
        # the other ranks get rank 0's verdict (while rank 0's store is up)
        assert roll.await_verdict(rv1, 5)[0] == 3
    [report] = got
    [result] = report.results
    assert result.check == "job.ranks.watchdog" and result.status.value == "error"
    assert result.message.startswith("gathering every rank's facts did not finish within its "
                                      "limit (--timeout 5 s + 2 s grace)"), result.message
    assert f"stuck: rank 1 (host {socket.gethostname()}, pid " in result.message
    assert int(report.exit_code) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stuck: rank 1 (host" in err[0], err
