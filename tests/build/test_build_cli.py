"""envcheck build through the real CLI entry point, solving against local channels."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.cli import COMMANDS, main
from envcheck.errors import ExitCode
from envcheck.lockfile.read import read_lock
from tests.support.channel import demo_channel, pkg, write_channel
from tests.support.channel import write_recipe as recipe
from tests.support.deadlines import HANG
from tests.unit.test_input_paths import SAYS, planted
from tests.unit.test_inputs import run_cli


@pytest.fixture
def channel(tmp_path: Path) -> str:
    return demo_channel(tmp_path / "channel")


def build(*args: object) -> int:
    return main(["build", *map(str, args)])


def test_build_writes_lock_then_reports_what_changed(tmp_path: Path, channel: str, capsys) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9, 'dask <2023']")
    assert build(r, "--out", out) == ExitCode.OK
    lock = read_lock(out / "demo.conda-lock.yml")
    versions = {p.name: p.version for p in lock.packages}
    assert versions["dask"] == "2022.7.1" and versions["python"] == "3.9.18"
    assert "new lock" in capsys.readouterr().out

    r = recipe(tmp_path, channel, "[python=3.9, dask, dask-cuda]")
    assert build(r, "--out", out, "--json", tmp_path / "r.json") == ExitCode.OK
    printed = capsys.readouterr().out
    assert "changes against the previous lock" in printed
    import json

    table = json.loads((tmp_path / "r.json").read_text())["tables"][0]
    changes = {row[3]: (row[4], row[5], row[6]) for row in table["rows"]}
    assert changes == {
        "dask": ("changed", "2022.7.1 0", "2023.3.2 0"),
        "distributed": ("changed", "2022.7.1 0", "2023.3.2 0"),
        "dask-cuda": ("added", "", "23.04.00 0"),
    }


def test_check_exits_stale_until_the_lock_matches_the_recipe(
    tmp_path: Path, channel: str, capsys
) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")
    assert build(r, "--out", out, "--check") == ExitCode.STALE
    assert "demo.conda-lock.yml is missing" in capsys.readouterr().err
    assert build(r, "--out", out) == ExitCode.OK
    assert build(r, "--out", out, "--check") == ExitCode.OK
    r.write_text(r.read_text().replace("python=3.9", "python=3.9.18"))
    capsys.readouterr()
    assert build(r, "--out", out, "--check") == ExitCode.STALE
    err = capsys.readouterr().err.strip()
    assert "is stale" in err and f"fix: envcheck build {r}" in err and "\n" not in err
    # description and notes do not make a lock stale
    r.write_text(r.read_text() + "notes: rebuilt monthly\n")
    assert build(r, "--out", out, "--check") == ExitCode.STALE


@pytest.mark.parametrize("kind", ["kmsg-link", "fifo", "mknod", "directory"])
def test_check_refuses_a_platform_lock_that_is_not_a_file_before_reading_it(
    tmp_path: Path, channel: str, capsys, kind: str
) -> None:
    """build --check reads each platform's explicit lock through open_input: a FIFO nobody
    writes, a kmsg device node, a link into /proc planted under its name is one line, exit 4,
    not a hang (a 60 s deadline catches one)."""
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")
    assert build(r, "--out", out) == ExitCode.OK
    capsys.readouterr()
    (out / "demo.linux-64.lock").unlink()
    planted(out, kind).rename(out / "demo.linux-64.lock")
    assert run_cli(["build", str(r), "--out", str(out), "--check"], seconds=60) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"explicit lock {out}/demo.linux-64.lock" in err and SAYS[kind] in err, err


def test_check_of_many_locks_says_one_per_line_and_no_line_is_long(tmp_path: Path,
                                                                   capsys) -> None:
    """Ten stale recipes on channels this machine cannot reach: each lock on its line, the fix
    once (the unreachable channels named once), no line wider than 100 columns and the
    prefix, where it was one line of thousands of characters."""
    recipes = []
    for i in range(10):
        r = tmp_path / f"remote{i}.yaml"
        r.write_text(f"name: remote{i}\nplatforms: [linux-64]\ndependencies: [python]\n"
                     "channels: ['https://conda.example.invalid/conda-forge', "
                     "'https://conda.example.invalid/rapidsai']\n")
        recipes.append(r)
    assert build(*recipes, "--out", tmp_path / "locks", "--check") == ExitCode.STALE
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "envcheck: 10 of 10 locks need a rebuild:"
    text = " ".join(ln.strip() for ln in lines)
    for i in range(10):  # each on a line of its own (a long path may wrap before "is missing")
        lock = f"  {tmp_path}/locks/remote{i}.conda-lock.yml"
        assert sum(ln.startswith(lock) for ln in lines) == 1
        assert text.count(f"remote{i}.conda-lock.yml is missing") == 1
    # every line at most 100 columns (and the prefix), unless one word (a path) is wider
    assert all(len(ln) <= 100 + len("envcheck: ") or " " not in ln.strip() for ln in lines)
    assert text.count("https://conda.example.invalid/conda-forge") == 1
    assert f"envcheck build {' '.join(map(str, recipes))} --out {tmp_path / 'locks'}" in text


def test_unreachable_channels_say_where_to_build(tmp_path: Path, capsys) -> None:
    r = tmp_path / "remote.yaml"
    # .invalid never resolves (RFC 2606): offline-safe and fast, like a channel behind no network
    r.write_text(
        "name: remote\nchannels: ['https://conda.example.invalid/conda-forge']\n"
        "platforms: [linux-64]\ndependencies: [python]\n"
    )
    assert build(r, "--out", tmp_path / "locks", "--check") == ExitCode.STALE
    err = capsys.readouterr().err
    assert "this machine cannot reach https://conda.example.invalid/conda-forge" in err
    assert "build the lock on a machine that reaches them" in err
    assert build(r, "--out", tmp_path / "locks") == ExitCode.UNREACHABLE
    err = capsys.readouterr().err.strip()
    assert err.startswith("envcheck: channel data cannot be fetched from here")
    assert "build this lock on a machine that reaches https://conda.example.invalid" in err
    assert not (tmp_path / "locks" / "remote.conda-lock.yml").exists()


def test_unsolvable_names_the_clashing_entries_and_keeps_the_old_lock(
    tmp_path: Path, channel: str, capsys
) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9, dask-cuda=22.08]")
    assert build(r, "--out", out) == ExitCode.OK
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = recipe(tmp_path, channel, "[python=3.9, dask-cuda=22.08, cudatoolkit, 'dask >=2023']")
    capsys.readouterr()
    # the release record already says 22.08 pins dask 2022.7.1; --no-lint asks the solver
    assert build(r, "--out", out, "--no-lint") == ExitCode.UNSOLVABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "'dask-cuda=22.08'" in err[0] and "'dask >=2023'" in err[0]
    culprits = err[0].split("cannot be installed")[0]
    assert "cudatoolkit" not in culprits and "python" not in culprits
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    assert build(r, "--out", out, "--explain", "--no-lint") == ExitCode.UNSOLVABLE
    explained = capsys.readouterr().err
    assert "Cannot solve the request" in explained and "dask ==2022.7.1" in explained


def test_excluded_package_pulled_in_names_the_chain(tmp_path: Path, channel: str, capsys) -> None:
    excl = "exclude: [{name: cugraph, reason: conflicts with cuml in 22.08}]\n"
    r = recipe(tmp_path, channel, "[python=3.9, rapids=22.08]", excl)
    assert build(r, "--out", tmp_path / "locks") == ExitCode.UNSOLVABLE
    err = capsys.readouterr().err
    assert (
        "cugraph is excluded (conflicts with cuml in 22.08) but required: recipe entry "
        "'rapids=22.08' -> rapids 22.08.00 -> cugraph 22.08.00" in err
    )
    assert not (tmp_path / "locks" / "demo.conda-lock.yml").exists()


def test_exclusion_steers_the_solver_and_is_recorded(tmp_path: Path, capsys) -> None:
    url = write_channel(
        tmp_path / "ch",
        [pkg("app", "2.0", ["cuml"]), pkg("app", "1.0"), pkg("cuml", "22.08")],
    )
    r = recipe(tmp_path, url, "[app]", "exclude: [{name: cuml, reason: breaks xgboost.dask}]\n")
    assert build(r, "--out", tmp_path / "locks") == ExitCode.OK
    lock = read_lock(tmp_path / "locks" / "demo.conda-lock.yml")
    assert {p.name: p.version for p in lock.packages} == {"app": "1.0"}
    assert [(e.name, e.reason) for e in lock.exclusions] == [("cuml", "breaks xgboost.dask")]


def test_channel_data_flag_solves_against_a_snapshot(tmp_path: Path) -> None:
    snapshot = write_channel(
        tmp_path / "snap",
        [pkg("python", "3.9.18"), pkg("dask", "2022.7.1", ["python"], noarch="python")],
        info={"envcheck_snapshot_of": "real.conda-lock.yml"},
        base_url="https://conda.anaconda.org/conda-forge",
    )
    r = recipe(tmp_path, "conda-forge", "[python=3.9, dask]")
    out = tmp_path / "locks"
    assert build(r, "--out", out, "--channel-data", snapshot) == ExitCode.OK
    lock = read_lock(out / "demo.conda-lock.yml")
    assert lock.channels == ("https://conda.anaconda.org/conda-forge",)
    assert {p.url for p in lock.packages} == {
        "https://conda.anaconda.org/conda-forge/linux-64/python-3.9.18-0.tar.bz2",
        "https://conda.anaconda.org/conda-forge/noarch/dask-2022.7.1-0.tar.bz2",
    }
    (data,) = lock.channel_data
    assert data.startswith(f"{snapshot} (linux-64/repodata.json sha256:")
    assert data.endswith(
        "; snapshot of real.conda-lock.yml; packages at https://conda.anaconda.org/conda-forge)"
    )
    assert build(r, "--out", out, "--check") == ExitCode.OK
    # an explicit file from another build of the recipe is caught too
    explicit = out / "demo.linux-64.lock"
    explicit.write_text(explicit.read_text().replace("# input_hash: ", "# input_hash: 0"))
    assert build(r, "--out", out, "--check") == ExitCode.STALE


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("malformed", r"demo.yaml:5:33: malformed YAML"),
        ("unknown key", r"demo.yaml:6:1: colour: unknown key"),
        ("invalid spec", r"demo.yaml:5:28: dependencies: 'dask >>=1' is not a conda match spec"),
        ("bad channel data", "channel https://exa mple.org/ch: could not parse url"),
        ("missing channel", "does not exist"),
        ("missing recipe", "recipe"),
        ("unwritable out", "output directory"),
    ],
)
def test_bad_input_is_one_line_exit_4(
    tmp_path: Path, channel: str, capsys, case: str, says: str
) -> None:
    out = tmp_path / "locks"
    r = recipe(tmp_path, channel, "[python=3.9]")
    if case == "malformed":
        r = recipe(tmp_path, channel, "[python=3.9, {dask]")
    elif case == "unknown key":
        r = recipe(tmp_path, channel, "[python=3.9]", "colour: blue\n")
    elif case == "invalid spec":
        r = recipe(tmp_path, channel, "[python=3.9, 'dask >>=1']")
    elif case == "missing channel":
        r = recipe(tmp_path, (tmp_path / "no-such-channel").as_uri(), "[python]")
    elif case == "missing recipe":
        r = tmp_path / "missing.yaml"
    elif case == "unwritable out":
        out = tmp_path / "a-file"
        out.write_text("not a directory")
    more = ["--channel-data", "https://exa mple.org/ch"] if case == "bad channel data" else []
    assert build(r, "--out", out, *more) == ExitCode.BAD_INPUT
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("envcheck: ") and says in err[0], err
    assert "Traceback" not in captured.err + captured.out


def test_existing_but_unwritable_out_dir_is_bad_input(tmp_path: Path, channel: str, capsys) -> None:
    if os.geteuid() == 0:  # root writes into read-only directories, but not into /proc
        out = Path("/proc/self")
    else:
        out = tmp_path / "ro"
        out.mkdir()
        out.chmod(0o500)
    r = recipe(tmp_path, channel, "[python]")
    try:
        assert build(r, "--out", out) == ExitCode.BAD_INPUT
    finally:
        if out.is_relative_to(tmp_path):
            out.chmod(0o700)
    assert f"output directory {out} is not writable" in capsys.readouterr().err


def test_bad_input_through_a_real_process(tmp_path: Path, channel: str) -> None:
    r = recipe(tmp_path, channel, "[python=3.9]", "colour: blue\n")
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "build", str(r), "--out", str(tmp_path / "l")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == ExitCode.BAD_INPUT
    assert proc.stderr.strip() == f"envcheck: {r}:6:1: colour: unknown key (allowed: " + (
        "name, description, channels, platforms, system, dependencies, pip, pip_extra_index, "
        "exclude, targets, "
        "notes)"
    )


def test_platform_flag_rebuilds_one_platform_and_keeps_the_other(tmp_path: Path) -> None:
    root = tmp_path / "ch"
    url = demo_channel(root)
    write_channel(root, [pkg("python", "3.9.18", build="h0_arm")], subdir="linux-aarch64")
    demo_channel(root)  # noarch again, as both calls write it
    r = recipe(
        tmp_path, url, "[python=3.9, dask <2023]",
        name="two", platforms="[linux-64, linux-aarch64]", system='{glibc: "2.17"}',
    )  # fmt: skip
    out = tmp_path / "locks"
    assert build(r, "--out", out) == ExitCode.OK
    arm = (out / "two.linux-aarch64.lock").read_bytes()
    assert build(r, "--out", out, "--platform", "linux-64") == ExitCode.OK
    lock = read_lock(out / "two.conda-lock.yml")
    assert {p.platform for p in lock.packages} == {"linux-64", "linux-aarch64"}
    assert (out / "two.linux-aarch64.lock").read_bytes() == arm
    assert build(r, "--out", out, "--platform", "osx-64") == ExitCode.BAD_INPUT

def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _blocked_on(fifo: Path, pid: int) -> bool:
    """Some thread of the build sleeps in open() of a FIFO, waiting for a writer."""
    waits = {"wait_for_partner", "fifo_open"}  # the kernel's wait channel, by kernel version
    for p in [pid, *_descendants(pid)]:
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                if (task / "wchan").read_text() in waits:
                    return True
            except OSError:
                continue
    return False


def start_blocked_build(
    tmp_path: Path, *extra: str
) -> tuple[subprocess.Popen[str], Path, dict, Path]:
    """A rebuild whose solver waits on a writerless FIFO; returns (proc, fifo, before, out).

    The FIFO as repodata has no writer: opening it blocks, so the solve cannot end (or fail)
    before a signal arrives. (Opening a writer would let the solver read an empty file and race
    the signal with a "bad channel" error.) The caller releases the FIFO and reaps the process.
    """
    root = tmp_path / "ch"
    url = demo_channel(root)
    out = tmp_path / "locks"
    r = recipe(tmp_path, url, "[python=3.9]")
    assert build(r, "--out", out) == ExitCode.OK
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    repodata = root / "linux-64" / "repodata.json"
    repodata.unlink()
    os.mkfifo(repodata)
    r.write_text(r.read_text().replace("python=3.9", "python=3.9.18"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "build", str(r), "--out", str(out), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a runner started in the background ignores SIGINT, and Python then installs no
        # KeyboardInterrupt handler: give the build the default disposition a terminal gives
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not _blocked_on(repodata, proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _blocked_on(repodata, proc.pid):
        proc.kill()
        proc.communicate()
        pytest.fail("the build never reached the channel's repodata")
    return proc, repodata, before, out


def test_interrupted_build_leaves_the_previous_lock_byte_identical(tmp_path: Path) -> None:
    proc, repodata, before, out = start_blocked_build(tmp_path)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=HANG)
    finally:
        # release a solver still waiting for a writer, so no process outlives the test
        with contextlib.suppress(OSError):
            os.close(os.open(repodata, os.O_WRONLY | os.O_NONBLOCK))
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert err.strip() == "envcheck: interrupted"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_build_imports_no_verify_module_and_help_still_covers_every_verb() -> None:
    """cli.py imports only the named verb's module: verify's imports cost build nothing."""
    code = (
        "import sys\n"
        "from envcheck.cli import main\n"
        "try:\n"
        "    main(['build', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('envcheck.verify.')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "usage: envcheck build" in run.stdout and "--channel-data" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == "[]"
    for words, says in [
        ([], "{" + ",".join(dict.fromkeys(path[0] for path in COMMANDS)) + "}"),
        (["verify"], "{" + ",".join(p[1] for p in COMMANDS if p[0] == "verify") + "}"),
        (["verify", "node"], "usage: envcheck verify node"),
    ]:
        help_ = subprocess.run(
            [sys.executable, "-m", "envcheck", *words, "--help"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert help_.returncode == 0 and says in help_.stdout, help_.stderr
