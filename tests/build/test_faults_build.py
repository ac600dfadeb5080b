"""envcheck build under faults and hostile input: nothing lost, nothing left running,
nothing that hangs, one line and a documented exit code for each. Real processes, real files,
real sockets, real solves on local channels.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck import interrupts
from envcheck.atomic import write_files_atomically
from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.resolve.recipe import MAX_ENTRIES
from envcheck.resolve.solve import DEFAULT_FETCH_TIMEOUT_S
from tests.build.test_build_cli import _descendants, start_blocked_build
from tests.support.channel import demo_channel
from tests.support.channel import write_recipe as recipe
from tests.support.deadlines import HANG


@pytest.fixture
def channel(tmp_path: Path) -> str:
    return demo_channel(tmp_path / "channel")


def build(*args: object) -> int:
    return main(["build", *map(str, args)])


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.exists() else {}


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envcheck: "), err
    assert "Traceback" not in err
    return lines[0]


# --- the lock pair: both files replaced, or neither --------------------------------------


def _chattr(flag: str, path: Path) -> bool:
    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.parametrize("which", ["demo.linux-64.lock", "demo.conda-lock.yml"])
def test_an_immutable_lock_file_leaves_the_whole_pair_untouched(
    tmp_path: Path, channel: str, capsys, which: str
) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")
    assert build(r, "--out", out) == ExitCode.OK
    before = snapshot(out)
    r.write_text(r.read_text().replace("python=3.9", "python=3.9, dask"))
    if not _chattr("+i", out / which):
        pytest.skip("chattr +i does not work here (needs root on ext2/3/4, xfs, btrfs)")
    try:
        capsys.readouterr()
        assert build(r, "--out", out) == ExitCode.BAD_INPUT
    finally:
        _chattr("-i", out / which)
    line = one_line(capsys.readouterr().err)
    assert f"cannot replace {out / which}" in line and "Operation not permitted" in line
    assert snapshot(out) == before  # no half-replaced pair, no temporary file left behind
    assert build(r, "--out", out, "--check") == ExitCode.STALE  # stale, not "disagree"


def test_the_swap_is_the_commit_point_a_later_signal_lets_the_run_finish(tmp_path: Path) -> None:
    """A real SIGINT to this process right after the files changed: remembered, not raised."""
    a, b = tmp_path / "x.conda-lock.yml", tmp_path / "x.linux-64.lock"
    a.write_bytes(b"old a")
    b.write_bytes(b"old b")
    restore = interrupts.install()
    sent = threading.Event()

    def signal_once_swapped() -> None:
        deadline = time.monotonic() + 10
        while b.read_bytes() != b"new b" and time.monotonic() < deadline:
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)
        sent.set()

    try:
        watcher = threading.Thread(target=signal_once_swapped)
        watcher.start()
        write_files_atomically({a: b"new a", b: b"new b"})
        assert sent.wait(10)
        time.sleep(0.2)  # the handler runs here: it must not raise KeyboardInterrupt
        watcher.join()
        assert interrupts.pending() == signal.SIGINT
    finally:
        restore()
    assert (a.read_bytes(), b.read_bytes()) == (b"new a", b"new b")


def _gone(pid: int, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    ("sig", "code", "says"),
    [
        (signal.SIGTERM, ExitCode.TERMINATED, "envcheck: terminated (SIGTERM)"),
        (signal.SIGKILL, -signal.SIGKILL, ""),
    ],
)
def test_sigterm_and_sigkill_end_the_solver_child_and_keep_the_lock(
    tmp_path: Path, sig: int, code: int, says: str
) -> None:
    report = tmp_path / "r.xml"
    proc, repodata, before, out = start_blocked_build(tmp_path, "--junit", str(report))
    children = _descendants(proc.pid)
    try:
        assert children, "the solver child was not found"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=HANG)
        # SIGKILL leaves no chance to clean up: the kernel ends the child (PR_SET_PDEATHSIG)
        left = [c for c in children if not _gone(c)]
    finally:
        with contextlib.suppress(OSError):
            os.close(os.open(repodata, os.O_WRONLY | os.O_NONBLOCK))
        if proc.poll() is None:
            proc.kill()
        for c in children:
            with contextlib.suppress(OSError):
                os.kill(c, signal.SIGKILL)
    assert proc.returncode == code, err
    assert err.strip() == says
    assert not left, f"solver child {left} outlived envcheck ({signal.Signals(sig).name})"
    assert snapshot(out) == before
    if sig == signal.SIGTERM:  # the report says what stopped the run
        import xml.etree.ElementTree as ET

        (case,) = ET.parse(report).getroot().iter("testcase")
        assert case.get("name") == "envcheck build"
        assert case.find("error").get("message") == "terminated by SIGTERM before it finished"
    else:
        assert not report.exists()


# --- report destinations are checked before any work --------------------------------------


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("json on /dev/full", "--json /dev/full is under /dev: envcheck writes only"),
        ("junit on /dev/full", "--junit /dev/full is under /dev: envcheck writes only"),
        ("same file", "name the same file"),
        ("same file, other spelling", "name the same file"),
        ("json is a directory", "is a directory"),
        ("json in a missing directory", "does not exist"),
    ],
)
def test_bad_report_destinations_are_refused_before_the_solve(
    tmp_path: Path, channel: str, capsys, case: str, says: str
) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")
    flags = {
        "json on /dev/full": ["--json", "/dev/full"],
        "junit on /dev/full": ["--junit", "/dev/full"],
        "same file": ["--json", tmp_path / "r", "--junit", tmp_path / "r"],
        "same file, other spelling": ["--json", tmp_path / "r", "--junit", tmp_path / "x/../r"],
        "json is a directory": ["--json", tmp_path],
        "json in a missing directory": ["--json", tmp_path / "nope" / "r.json"],
    }[case]
    (tmp_path / "x").mkdir()
    assert build(r, "--out", out, *flags) == ExitCode.BAD_INPUT
    assert says in one_line(capsys.readouterr().err)
    assert not out.exists()  # refused before the solve: no lock written


def test_stdout_on_dev_full_is_refused_before_the_solve(tmp_path: Path, channel: str) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "envcheck", "build", str(r), "--out", str(out)],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    assert "standard output cannot be written: No space left on device" in one_line(proc.stderr)
    assert not out.exists()


def test_a_write_error_names_the_file(tmp_path: Path, channel: str) -> None:
    """A lock larger than the file size limit: EFBIG, a real write failure, naming the file."""
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")

    def small_files() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death by signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "build", str(r), "--out", str(out)],
        capture_output=True, text=True, timeout=60, preexec_fn=small_files,
    )  # fmt: skip
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    line = one_line(proc.stderr)
    assert f"cannot write {out / 'demo.'}" in line and "File too large" in line
    assert [p.name for p in out.iterdir()] == []  # no temporary file left behind


# --- recipes that would hang or crash the loader -------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("fifo", "is a FIFO, not a regular file"),
        ("directory", "is a directory, not a regular file"),
        ("5 MB", "is larger than the 256 KiB limit"),
        ("too many entries", f"the limit is {MAX_ENTRIES:,}"),
        ("nested lists", "nesting too deep"),
        ("nested mappings", "nesting too deep"),
        ("cuda eleven", "system.cuda: 'eleven' is not a version"),
        ("glibc banana", "system.glibc: 'banana' is not a version"),
        ("not utf-8", "is not UTF-8 text"),
    ],
)
def test_hostile_recipes_are_refused_at_once(
    tmp_path: Path, channel: str, capsys, case: str, says: str
) -> None:
    head = f"name: demo\nchannels: ['{channel}']\nplatforms: [linux-64]\n"
    p = tmp_path / "r.yaml"
    if case == "fifo":
        os.mkfifo(p)  # no writer: reading it would block for ever
    elif case == "directory":
        p.mkdir()
    elif case == "5 MB":
        deps = "".join(f"  - pkg{i}\n" for i in range(400_000))
        _write(p, head + "dependencies:\n" + deps)
    elif case == "too many entries":
        _write(p, head + "dependencies:\n" + "".join(f"  - p{i}\n" for i in range(MAX_ENTRIES + 1)))
    elif case == "nested lists":
        _write(p, head + "dependencies: " + "[" * 3000 + "]" * 3000 + "\n")
    elif case == "nested mappings":
        _write(p, head + "dependencies: [python]\nnotes: " + "{a: " * 3000 + "1" + "}" * 3000)
    elif case == "cuda eleven":
        _write(p, head + 'system: {cuda: "eleven"}\ndependencies: [python]\n')
    elif case == "glibc banana":
        _write(p, head + 'system: {glibc: "banana"}\ndependencies: [python]\n')
    elif case == "not utf-8":
        p.write_bytes(head.encode() + b"dependencies: [\xff]\n")
    started = time.monotonic()
    assert build(p, "--out", tmp_path / "locks") == ExitCode.BAD_INPUT
    assert time.monotonic() - started < HANG
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "locks").exists()


# --- channels that hang, answer 404 or answer garbage ---------------------------------------


@contextlib.contextmanager
def blackhole() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conns.append(srv.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        t.join()
        for c in conns:
            c.close()
        srv.close()


@contextlib.contextmanager
def http_dir(root: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*a, directory=str(root), **k)

        def log_message(self, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client that hung up early (rattler does after a 404) is not news

    server = Server(("127.0.0.1", 0), Quiet)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_channel_that_never_answers_is_unreachable_within_the_fetch_timeout(
    tmp_path: Path, capsys
) -> None:
    with blackhole() as port:
        url = f"http://127.0.0.1:{port}/hole"
        r = recipe(tmp_path, url, "[python]")
        started = time.monotonic()
        code = build(r, "--out", tmp_path / "locks", "--fetch-timeout", "2")
        took = time.monotonic() - started
    assert code == ExitCode.UNREACHABLE
    line = one_line(capsys.readouterr().err)
    assert url in line and "within 2 s" in line and "--fetch-timeout" in line
    assert took < HANG < DEFAULT_FETCH_TIMEOUT_S, took  # the option held, not the default


@pytest.mark.parametrize(
    ("case", "says"), [("404", "404"), ("not json", "failed to parse repodata.json")]
)
def test_a_channel_answering_404_or_garbage_is_bad_channel_data(
    tmp_path: Path, capsys, case: str, says: str
) -> None:
    root = tmp_path / "srv"
    (root / "ch").mkdir(parents=True)
    if case == "not json":
        for sd in ("linux-64", "noarch"):
            (root / "ch" / sd).mkdir()
            (root / "ch" / sd / "repodata.json").write_text("{not json")
    with http_dir(root) as base:
        r = recipe(tmp_path, f"{base}/ch", "[python]")
        assert build(r, "--out", tmp_path / "locks", "--fetch-timeout", "20") == ExitCode.BAD_INPUT
    line = one_line(capsys.readouterr().err)
    assert f"bad channel data from {base}/ch" in line and says in line


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("nan", "seconds must be a finite number"),
        ("inf", "seconds must be a finite number"),
        ("-inf", "seconds must be a finite number"),
        ("soon", "not a number of seconds"),
        ("0", "--fetch-timeout must be positive"),
        ("-1", "--fetch-timeout must be positive"),
    ],
)
def test_fetch_timeout_must_be_finite_and_positive(
    tmp_path: Path, channel: str, capsys, value: str, says: str
) -> None:
    r = recipe(tmp_path, channel, "[python]")
    try:
        code = build(r, "--out", tmp_path / "locks", f"--fetch-timeout={value}")
    except SystemExit as e:  # argparse's error, one line (cli._Parser)
        code = e.code
    assert code == ExitCode.BAD_INPUT
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "locks").exists()


def test_ctrl_c_after_the_locks_were_swapped_lets_the_build_finish(tmp_path: Path) -> None:
    """A real SIGINT to a real build that has replaced its lock and is still printing.

    1,500 packages change version, so the report (128 KB) fills the stdout pipe that
    this test does not read yet: the build blocks there, after its commit point, for as long
    as the test wants. Ctrl-C then must not turn a written lock into exit 130, nor cut the
    report short (a handled signal interrupts the blocked write, and CPython drops the rest
    of it: the signals are held, blocked, after the commit point).
    """
    from tests.support.channel import pkg, write_channel

    n = 1500
    libs = [pkg(f"lib{i:04d}", v) for i in range(n) for v in ("1.0", "2.0")]
    metas = [pkg("all", v, [f"lib{i:04d} =={v}.0" for i in range(n)]) for v in ("1", "2")]
    url = write_channel(tmp_path / "ch", libs + metas)
    out = tmp_path / "locks"
    r = recipe(tmp_path, url, "['all ==1']")
    assert build(r, "--out", out, "--quiet") == ExitCode.OK
    explicit = out / "demo.linux-64.lock"
    old = explicit.read_bytes()
    r.write_text(r.read_text().replace("all ==1", "all ==2"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "build", str(r), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while explicit.read_bytes() == old and time.monotonic() < deadline:
            time.sleep(0.02)
        assert explicit.read_bytes() != old, "the build never replaced its lock"
        while time.monotonic() < deadline:  # until it sleeps writing to the full pipe
            wchan = Path(f"/proc/{proc.pid}/wchan").read_text()
            if wchan.endswith(("pipe_write", "pipe_wait")) or proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the build finished before the pipe filled"
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        out_text, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitCode.OK, err
    assert err.decode().strip() == ""
    assert b"lib1499" in out_text  # the whole report came out
    assert b"lib1499-2.0" in explicit.read_bytes()


def test_a_report_that_fails_after_the_locks_were_written_is_not_bad_input(
    tmp_path: Path,
) -> None:
    """--json passes the check before the solve, then fails after the swap: exit 3, saying the
    locks were written (never exit 4, which would read as 'nothing happened')."""
    root = tmp_path / "srv"
    demo_channel(root / "ch")
    requested, go = threading.Event(), threading.Event()

    class Held(http.server.SimpleHTTPRequestHandler):
        """Serves the channel; holds the first repodata.json answer until the test says go."""

        def __init__(self, *a, **k) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*a, directory=str(root), **k)

        def do_GET(self) -> None:
            if self.path.endswith("/repodata.json"):
                requested.set()
                go.wait(30)
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass

    server = Server(("127.0.0.1", 0), Held)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = tmp_path / "locks"
    r = recipe(tmp_path, f"http://127.0.0.1:{server.server_address[1]}/ch", "[python=3.9]")
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / "not-yet.json")  # dangling: a fine destination before the solve
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "build", str(r), "--out", str(out),
         "--json", str(link), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert requested.wait(60), "the build never asked for the channel's repodata"
        link.unlink()
        link.symlink_to("/dev/full")  # the disk "fills up" during the solve
        go.set()
        _, err = proc.communicate(timeout=60)
    finally:
        go.set()
        if proc.poll() is None:
            proc.kill()
        server.shutdown()
        server.server_close()
    assert proc.returncode == ExitCode.ERROR, err
    line = one_line(err)
    # swapped for a device after the check: refused as it is opened, /dev/full left as it was
    assert f"--json {link} resolves to /dev/full, under /dev" in line
    assert line.endswith("(the locks were written)")
    assert b"python-3.9.18" in (out / "demo.linux-64.lock").read_bytes()
