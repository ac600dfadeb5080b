"""envcheck verify under faults and hostile input: bad locks and flags are one line
and exit 4 before anything is probed; a signal ends every probe child it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.verify.facts import conda_platform
from tests.support.deadlines import HANG
from tests.support.report_schema import validated
from tests.support.stopping import stopped_once_ready

EXCERPT = Path(__file__).parents[1] / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envcheck: "), err
    assert "Traceback" not in err
    return lines[0]


def _lock(tmp_path: Path, case: str) -> Path:
    text = EXCERPT.read_text()
    if case == "other platform":
        text = text.replace("linux-64", "osx-arm64")
    elif case == "no packages":
        doc = yaml.safe_load(text)
        doc["package"] = []
        text = yaml.safe_dump(doc)
    elif case == "glibc banana":
        text = text.replace("__glibc: '>=2.17'", "__glibc: banana", 1)
    p = tmp_path / "x.conda-lock.yml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("other platform", "has no {here} packages (it has osx-arm64)"),
        ("no packages", "the lock lists no packages"),
        ("glibc banana", "nccl needs __glibc 'banana', which is not a version spec"),
    ],
)
def test_locks_that_check_nothing_or_nonsense_are_bad_input(
    tmp_path: Path, capsys, case: str, says: str
) -> None:
    if case == "other platform" and conda_platform() == "osx-arm64":
        pytest.skip("this machine is osx-arm64")
    lock = _lock(tmp_path, case)
    rc = main(["verify", "node", "--lock", str(lock), "--json", str(tmp_path / "r.json")])
    assert rc == ExitCode.BAD_INPUT
    said = says.format(here=conda_platform())
    assert said in one_line(capsys.readouterr().err)
    # the report is written on every exit: one error result carrying the same line
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == ExitCode.BAD_INPUT and report["status"] == "error"
    assert [r["status"] for r in report["results"]] == ["error"]
    assert said in report["results"][0]["message"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["verify", "node", "--probe-timeout", "nan"], "seconds above 0 and at most 86400"),
        (["verify", "node", "--probe-timeout", "inf"], "seconds above 0 and at most 86400"),
        (["verify", "node", "--probe-timeout", "0"], "seconds above 0 and at most 86400"),
        (["verify", "cluster", "--timeout", "nan"], "seconds must be a finite number"),
        (["verify", "cluster", "--timeout", "inf"], "seconds must be a finite number"),
        (["verify", "cluster", "--timeout=-3"], "--timeout must be positive"),
        (["verify", "cluster", "--smoke-timeout", "nan"], "seconds must be a finite number"),
        (["verify", "cluster", "--smoke-timeout", "1e999"], "seconds must be a finite number"),
        (["verify", "job", "--timeout", "1e308"], "at most 2.592e+06 (30 days)"),
        (["verify", "job", "--timeout", "inf"], "seconds must be a finite number"),
        (["verify", "job", "--timeout", "nan"], "seconds must be a finite number"),
        (["verify", "ray", "--timeout", "1e308"], "at most 2.592e+06 (30 days)"),
    ],
)
def test_non_finite_or_non_positive_seconds_are_one_line_exit_4(
    capsys, argv: list[str], says: str
) -> None:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's error, one line (cli._Parser)
        code = e.code
    assert code == ExitCode.BAD_INPUT
    line = one_line(capsys.readouterr().err)
    assert argv[2].split("=")[0] in line and says in line


def test_bad_flag_is_one_line_not_a_usage_block(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify", "node", "--no-such-flag"])
    assert exc.value.code == ExitCode.BAD_INPUT
    assert "--no-such-flag" in one_line(capsys.readouterr().err)


def test_json_and_junit_on_one_file_is_refused(tmp_path: Path, capsys) -> None:
    same = tmp_path / "report"
    assert main(["verify", "node", "--json", str(same), "--junit", str(same)]) == 4
    said = one_line(capsys.readouterr().err)
    assert f"--json {same} and --junit {same} name the same file" in said
    assert not same.exists()


# --- a signal during an import probe ends the probe and what it started --------------------

HANGING_IMPORT = """
import os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(os.environ["HANG_PIDS"], "w") as f:
    f.write(f"{os.getpid()} {grandchild.pid}")
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize(
    ("sig", "code", "says"),
    [
        (signal.SIGTERM, ExitCode.TERMINATED, "envcheck: terminated (SIGTERM)"),
        (signal.SIGINT, ExitCode.INTERRUPTED, "envcheck: interrupted"),
    ],
)
def test_a_signal_during_an_import_probe_leaves_no_process_behind(
    tmp_path: Path, sig: int, code: int, says: str
) -> None:
    (tmp_path / "hangs_on_import.py").write_text(HANGING_IMPORT)
    pids_file = tmp_path / "pids"
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env["HANG_PIDS"] = str(pids_file)
    argv = [sys.executable, "-m", "envcheck", "verify", "node", "--import", "hangs_on_import",
            "--no-plugins", "--quiet"]
    def written() -> bool:  # both pids: the probe and its child are running
        return pids_file.exists() and len(pids_file.read_text().split()) == 2

    try:
        returncode, err = stopped_once_ready(argv, env, written, sig)
        pids = [int(p) for p in pids_file.read_text().split()]
        deadline = time.monotonic() + HANG
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [p for p in pids if _alive(p)]
    finally:  # the probe and its child, whatever happened above
        with contextlib.suppress(OSError, ValueError):
            for p in map(int, pids_file.read_text().split()):
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
    assert returncode == code, err
    assert err.strip() == says
    assert not left, f"probe processes {left} outlived envcheck"


# --- a scheduler that dies during the run ---------------------------------------------------


@pytest.mark.slow
def test_a_scheduler_killed_mid_run_is_an_error_naming_it_without_dask_tracebacks(
    tmp_path: Path,
) -> None:
    import json

    from tests.support.subprocess_cluster import start_cluster

    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "hangs_on_import.py").write_text(HANGING_IMPORT)
    pids_file = tmp_path / "pids"
    cluster = start_cluster(tmp_path / "cluster")
    pids: list[int] = []
    try:
        cluster.add_worker("a", env={"PYTHONPATH": str(mods), "HANG_PIDS": str(pids_file)})
        cluster.wait_for_workers(["a"])
        report = tmp_path / "r.json"
        proc = subprocess.Popen(
            [sys.executable, "-m", "envcheck", "verify", "cluster", cluster.address,
             "--import", "hangs_on_import", "--smoke", "array", "--quiet", "--json", str(report)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not pids_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the facts round is under way: the worker is probing the import
        time.sleep(0.1)
        pids = [int(p) for p in pids_file.read_text().split()]
        cluster.scheduler.kill()
        out, err = proc.communicate(timeout=90)
    finally:
        cluster.stop()
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
    assert proc.returncode == ExitCode.ERROR, err
    assert err == ""  # no distributed.client tracebacks on the terminal
    results = json.loads(report.read_text())["results"]
    lost = [r for r in results if r["check"] == "scheduler"]
    assert lost and lost[0]["status"] == "error", results
    assert cluster.address in lost[0]["message"] and "stopped answering" in lost[0]["message"]


# --- the DDP smoke message names each rank's GPU ------------------------------------------


def test_ddp_ranks_name_their_physical_gpu_not_only_cuda_0() -> None:
    from envcheck.verify.smoke.suite import gpu_named
    from tests.support.factories import h200x2, with_env

    two = h200x2()
    rank0, rank1 = with_env(two, CUDA_VISIBLE_DEVICES="0"), with_env(two, CUDA_VISIBLE_DEVICES="1")
    a, b = gpu_named("cuda:0", rank0), gpu_named("cuda:0", rank1)
    assert a == f"cuda:0 = GPU 0 {two.gpus[0].uuid}"
    assert b == f"cuda:0 = GPU 1 {two.gpus[1].uuid}"
    assert gpu_named("cpu", rank0) == "cpu"  # gloo on CPU workers
    assert gpu_named("cuda:0", None) == "cuda:0"  # no facts: as torch says it


# --- Ctrl-C in a terminal during an embedded verify cluster ----------------------------------


def _tree(pid: int) -> list[int]:
    from tests.build.test_build_cli import _descendants

    return _descendants(pid)


@pytest.mark.slow
@pytest.mark.parametrize("when", ["workers starting", "workers running"])
def test_ctrl_c_to_the_whole_process_group_is_one_line_and_exit_130(
    when: str, tmp_path: Path
) -> None:
    """A terminal sends SIGINT to every process of the foreground group, workers included;
    the --json report says the run was interrupted."""
    report = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "verify", "cluster", "--quiet", "--workers", "2",
         "--json", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 90
        want = 1 if when == "workers starting" else 3  # 2 workers and the resource tracker
        while time.monotonic() < deadline:
            kids = _tree(proc.pid)
            seen |= set(kids)
            if len(kids) >= want:
                break
            time.sleep(0.05)
        if when == "workers running":
            time.sleep(1.5)
            seen |= set(_tree(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=90)
        deadline = time.monotonic() + 15
        while any(map(_alive, seen)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in seen if _alive(p)]
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert seen, "no worker process was seen"
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert err == "envcheck: interrupted\n"
    assert not left, f"processes {left} outlived envcheck"
    data = validated(report)
    assert data["exit_code"] == 130 and data["title"] == "envcheck verify cluster"
    assert [r["message"] for r in data["results"]] == [
        "interrupted (SIGINT, Ctrl-C) before it finished"]


def test_a_full_disk_message_names_the_file(tmp_path, capsys) -> None:
    """A real full file system (a 64 KiB tmpfs, filled): the message names the file, and no
    partial file is left behind. (/dev/full is refused before the run: a device.)"""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode:
        pytest.skip("no tmpfs mount here (needs root)")
    try:
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as f:
            f.write(b"x" * (1 << 20))  # fills it: ENOSPC
        target = disk / "facts.json"
        assert main(["verify", "node", "--quiet", "--save-facts", str(target)]) == \
            ExitCode.BAD_INPUT
        line = one_line(capsys.readouterr().err)
        assert f"--save-facts {target}" in line and "No space left on device" in line
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
