"""Every reader of a user-named file, given what is not a file: a FIFO nobody writes, a
character device that never ends (a real /dev/zero made with mknod), a directory, a symlink
loop, a file over the size cap (sparse), JSON nested 100,000 deep. Each is one line, exit 4,
within seconds: no hang, no traceback, no 6 GB read."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import BadInput
from envcheck.inputs import json_depth, load_json_file, private_copy, read_bytes
from envcheck.verify.facts.kernel_log import MAX_LOG_BYTES, read_kernel_log
from tests.support.deadlines import HANG

DEEP = "[" * 100_000 + "]" * 100_000


def hostile(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "zero":
        os.mknod(p, 0o666 | 0o020000, os.makedev(1, 5))  # what /dev/zero is
    elif kind == "directory":
        p.mkdir()
    elif kind == "loop":
        (tmp_path / "loop-b").symlink_to(p)
        p.symlink_to(tmp_path / "loop-b")
    elif kind == "huge":
        with open(p, "wb") as f:
            f.truncate(8 << 30)  # sparse: 8 GiB that cost nothing on disk
    elif kind == "deep":
        p.write_text(DEEP)
    return p


SAYS = {"fifo": "is a FIFO", "zero": "is a character device", "directory": "is a directory",
        "loop": "is a symlink loop", "huge": "limit", "deep": "nested deeper than 64"}


def run_cli(argv: list[str], seconds: float = 20.0) -> int:
    """main(argv) in a thread: a reader that blocks fails the test instead of hanging it."""
    box: dict[str, int] = {}

    def target() -> None:
        try:
            box["rc"] = main(argv)
        except SystemExit as e:
            box["rc"] = int(e.code)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{argv} still running after {seconds} s"
    return box["rc"]


def recipe_argv(p: Path, tmp: Path) -> list[str]:
    return ["build", str(p), "--out", str(tmp / "locks")]


# option -> argv that makes envcheck read the file named by {}
READERS = {
    "verify node --facts": lambda p, t: ["verify", "node", "--facts", str(p)],
    "verify node --lock": lambda p, t: ["verify", "node", "--lock", str(p), "--no-plugins"],
    "verify node --kernel-log": lambda p, t: ["verify", "node", "--kernel-log", str(p)],
    "verify cluster --scheduler-file": lambda p, t: ["verify", "cluster", "--scheduler-file",
                                                     str(p)],
    "verify cluster --tls-ca-file": lambda p, t: ["verify", "cluster", "tls://127.0.0.1:1",
                                                  "--tls-ca-file", str(p)],
    "verify cluster --jobqueue-config": lambda p, t: [
        "verify", "cluster", "--jobqueue", "slurm", "--workers", "1", "--jobqueue-config",
        str(p)],
    "slurm script --lock": lambda p, t: ["slurm", "script", "--lock", str(p)],
    "install LOCK": lambda p, t: ["install", str(p), "--prefix", str(t / "prefix")],
    "diff LOCK": lambda p, t: ["diff", str(p), str(p)],
    "build RECIPE": recipe_argv,
}
JSON_READERS = ("verify node --facts", "verify cluster --scheduler-file")


@pytest.mark.parametrize("kind", ["fifo", "zero", "directory", "loop", "huge", "deep"])
@pytest.mark.parametrize("reader", list(READERS))
def test_a_reader_given_what_is_not_its_file_says_so_in_one_line(tmp_path, capsys, reader,
                                                                  kind):
    if kind == "deep" and reader not in JSON_READERS:
        pytest.skip("only JSON readers get JSON")
    if kind == "fifo" and reader == "verify node --facts":
        pytest.skip("--facts reads a FIFO, to its deadline: the two tests below")
    if reader == "verify cluster --jobqueue-config":
        pytest.importorskip("dask_jobqueue")
    p = hostile(tmp_path, kind)
    started = time.monotonic()
    rc = run_cli(READERS[reader](p, tmp_path))
    err = capsys.readouterr().err
    assert rc == 4, err
    assert time.monotonic() - started < HANG
    assert err.count("\n") == 1 and "Traceback" not in err
    assert SAYS[kind] in err, err


def test_facts_may_come_from_a_fifo_that_a_writer_fills(tmp_path, capsys):
    """--facts documents a FIFO (process substitution): read to EOF against a deadline."""
    saved = tmp_path / "saved.json"
    assert main(["verify", "node", "--quiet", "--no-plugins", "--save-facts", str(saved)]) in (
        0, 1, 2)
    fifo = hostile(tmp_path, "fifo")

    def writer() -> None:
        with open(fifo, "w") as f:
            time.sleep(0.3)  # the reader is waiting by now
            f.write(saved.read_text())

    t = threading.Thread(target=writer)
    t.start()
    rc = run_cli(["verify", "node", "--quiet", "--no-plugins", "--facts", str(fifo)])
    t.join()
    capsys.readouterr()
    assert rc in (0, 1, 2)  # judged: the facts arrived whole


def test_a_fifo_with_no_writer_ends_at_its_deadline(tmp_path):
    fifo = hostile(tmp_path, "fifo")
    started = time.monotonic()
    with pytest.raises(BadInput, match="did not finish within 0.5 s"):
        read_bytes(fifo, "facts file", 1 << 20, fifo_timeout=0.5)
    assert time.monotonic() - started < HANG


def test_json_depth_ignores_brackets_in_strings_and_counts_real_nesting(tmp_path):
    assert json_depth('{"a": "[[[[[[", "b": [[1], {"c": "}}}"}]}') == 3
    assert json_depth('["\\"[[[", [[]]]') == 3
    p = tmp_path / "ok.json"
    p.write_text(json.dumps({"a": [[[[1]]]]}))
    assert load_json_file(p, "x", 1 << 20) == {"a": [[[[1]]]]}
    with pytest.raises(BadInput, match="nested deeper than 3"):
        load_json_file(p, "x", 1 << 20, max_depth=3)


@pytest.mark.parametrize("kind", ["fifo", "zero", "directory"])
def test_the_facts_packages_kernel_log_reader_refuses_what_never_ends(tmp_path, kind):
    """The collector (shipped by value, no envcheck import) bounds its own reads: a worker
    given --kernel-log /dev/zero or a FIFO reports why, at once, instead of reading forever."""
    p = hostile(tmp_path, kind)
    started = time.monotonic()
    events, source, error, lines = read_kernel_log(str(p))
    assert time.monotonic() - started < HANG
    assert events == () and lines == 0
    assert SAYS[kind].replace("is ", "") in error and "not /dev/kmsg or a saved log" in error


def test_the_kernel_log_reader_stops_at_its_cap_on_a_file_without_newlines(tmp_path):
    p = tmp_path / "kern.log"
    with open(p, "wb") as f:
        f.write(b"[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus\n")
        f.truncate(MAX_LOG_BYTES + (64 << 20))  # zeros, no newline: one line if read whole
    events, _, error, _ = read_kernel_log(str(p))
    assert [e.code for e in events] == [79]
    assert "read only the first 256 MiB" in error


@pytest.mark.parametrize("kind", ["fifo", "zero", "directory", "huge"])
def test_the_linker_childs_lock_reader_refuses_what_is_not_a_lock_file(tmp_path, kind):
    """A linker child started as a fresh interpreter reads the lock named on the command line
    itself: it must refuse at once, as envcheck does, not block on a FIFO or fill its memory
    from a device."""
    from envcheck.provision._link_child import _read_lock

    p = hostile(tmp_path, kind)
    started = time.monotonic()
    with pytest.raises(BadInput, match=SAYS[kind]):
        _read_lock(str(p), "linux-64")
    assert time.monotonic() - started < HANG


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_install_of_what_is_not_a_lock_file_is_refused_at_once(tmp_path, kind):
    """The whole CLI: one line, exit 4, at once, and no child of the envcheck process."""
    import subprocess
    import sys

    p = hostile(tmp_path, kind)
    code = (
        "import os, sys\n"
        "from envcheck.cli import main\n"
        "rc = main()\n"
        "print(open(f'/proc/{os.getpid()}/task/{os.getpid()}/children').read().split())\n"
        "sys.exit(rc)\n"
    )
    argv = ["install", str(p), "--prefix", str(tmp_path / "env"),
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert time.monotonic() - started < HANG
    assert done.stderr.count("\n") == 1 and SAYS[kind] in done.stderr, done.stderr
    assert done.stdout.split("\n")[0] == "[]", done.stdout


def test_a_private_copy_keeps_the_bytes_read_when_the_file_changes_after(tmp_path):
    """What a library parses by the copy's path is what was read (and hashed), even when the
    file is rewritten in between; the copy is gone once the block ends."""
    lock = tmp_path / "env.lock"
    lock.write_bytes(b"version: 6\n")
    with private_copy(lock, "lock", 1 << 20) as (data, copy):
        lock.write_bytes(b"version: 666\n" * 10)
        assert data == b"version: 6\n"
        assert Path(copy).read_bytes() == data
        assert copy != str(lock)
    assert not Path(copy).exists()


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_private_copy_of_what_is_not_a_file_is_refused_at_once(tmp_path, kind):
    p = hostile(tmp_path, kind)
    started = time.monotonic()
    with pytest.raises(BadInput, match=SAYS[kind]), private_copy(p, "lock", 1 << 20):
        pass
    assert time.monotonic() - started < HANG
