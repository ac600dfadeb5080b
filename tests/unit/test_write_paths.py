"""The one way envcheck writes a path a user names, against what another user planted: uid
nobody (a real process, through setpriv) plants a symbolic link in a directory everyone may
write, to a root-only 0600 file; root's --json/--junit/--out/--save-facts and a build's locks
are refused in one line, exit 4, and the file keeps its bytes. A hard link is replaced, not
written through; the caller's own link is followed; a destination in /proc is refused before
the run."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from tests.unit.test_destinations import WRITERS, _verbs

ROOT = os.geteuid() == 0
SECRET = b"root's own bytes\n"
needs_root = pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None,
                                reason="planting as another uid needs root and setpriv")


@pytest.fixture
def shared() -> Path:
    """A directory any user may write, without the sticky bit (a team's shared folder)."""
    d = Path(tempfile.mkdtemp(prefix="envcheck-shared-"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d)


def as_nobody(*argv: str) -> None:
    nobody = pwd.getpwnam("nobody")
    subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                    "--clear-groups", *argv], check=True, timeout=60)


def root_only(tmp_path: Path) -> Path:
    secret = tmp_path / "root-only"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    return secret


@needs_root
@pytest.mark.parametrize(("verb", "flag"), [*WRITERS, ("verify node", "--save-facts")],
                         ids=[f"{v}{f}" for v, f in WRITERS] + ["verify node--save-facts"])
def test_a_link_another_user_planted_is_refused_and_its_target_unchanged(
        tmp_path, shared, capsys, verb, flag):
    secret = root_only(tmp_path)
    link = shared / "report"
    as_nobody("ln", "-s", str(secret), str(link))
    assert os.lstat(link).st_uid == pwd.getpwnam("nobody").pw_uid
    rc = main([*_verbs(tmp_path)[verb], flag, str(link)])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert rc == ExitCode.BAD_INPUT, captured.err
    assert len(err) == 1 and f"{link} is a symbolic link of uid" in err[0], err
    assert secret.read_bytes() == SECRET and os.path.islink(link)
    assert not (tmp_path / "locks").exists() and not (tmp_path / "env").exists()


@needs_root
def test_a_directory_link_another_user_planted_is_refused(tmp_path, shared, capsys):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    as_nobody("ln", "-s", str(private), str(shared / "out"))
    rc = main(["slurm", "script", "--json", str(shared / "out" / "r.json")])
    err = capsys.readouterr().err
    assert rc == ExitCode.BAD_INPUT and "is a symbolic link of uid" in err, err
    assert list(private.iterdir()) == []


@needs_root
def test_build_refuses_a_lock_that_is_another_users_link(tmp_path, shared, capsys):
    secret = root_only(tmp_path)
    argv = _verbs(tmp_path)["build"]
    argv[argv.index("--out") + 1] = str(shared)
    as_nobody("ln", "-s", str(secret), str(shared / "demo.conda-lock.yml"))
    assert main(argv) == ExitCode.BAD_INPUT
    assert "is a symbolic link of uid" in capsys.readouterr().err
    assert secret.read_bytes() == SECRET


def test_a_hard_link_is_replaced_not_written_through(tmp_path, capsys):
    secret = root_only(tmp_path)
    report = tmp_path / "report.json"
    os.link(secret, report)
    assert main(["slurm", "script", "--json", str(report)]) == 0
    capsys.readouterr()
    assert secret.read_bytes() == SECRET
    assert report.read_text().startswith("{") and os.stat(report).st_nlink == 1


def test_the_callers_own_link_is_followed_and_stays_a_link(tmp_path, capsys):
    real = tmp_path / "runs" / "latest.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    assert main(["slurm", "script", "--json", str(link)]) == 0
    capsys.readouterr()
    assert os.path.islink(link) and real.read_text().startswith("{")
    assert real.stat().st_mode & 0o777 == 0o640  # the file's mode is kept
    assert sorted(p.name for p in real.parent.iterdir()) == ["latest.json"]  # no temp left


@pytest.mark.parametrize("given", ["/proc/kmsg", "link"])
def test_a_destination_in_proc_is_refused_before_the_run(tmp_path, capsys, given):
    if given == "link":
        given = str(tmp_path / "link")
        os.symlink("/proc/kmsg", given)
    argv = _verbs(tmp_path)["build"]
    assert main([*argv, "--json", given]) == ExitCode.BAD_INPUT
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "under /proc: envcheck writes only regular files" in err[0], err
    assert captured.out == "" and not (tmp_path / "locks").exists()  # the run never started
