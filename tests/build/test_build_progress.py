"""Progress on a terminal only, through real processes: `envcheck build` with its stderr a real
pseudo-terminal says what it solves, for which platform and with what, on one line rewritten
with carriage returns and erased at the end; with stderr a pipe, under ``--json -``, under
``--quiet`` and as a launcher's rank 1, nothing of it appears."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.channel import pkg, write_channel
from tests.support.channel import write_recipe as recipe
from tests.support.terminal import run_envcheck


def run(args: list[object], *, tty: bool, env: dict[str, str] | None = None
        ) -> tuple[int, bytes, bytes]:
    return run_envcheck(args, tty=tty, env=env)


@pytest.fixture
def two_platforms(tmp_path: Path) -> Path:
    packages = [pkg("hello", "1.0", noarch="generic"), pkg("world", "2.0", ["hello"],
                                                          noarch="generic")]
    for subdir in ("linux-64", "linux-aarch64"):
        channel = write_channel(tmp_path / "channel", packages, subdir)
    return recipe(tmp_path, channel, "[hello, world]", platforms="[linux-64, linux-aarch64]")


def test_a_terminal_sees_the_solve_and_the_line_is_erased_at_the_end(
    tmp_path: Path, two_platforms: Path
) -> None:
    rc, out, err = run(["build", two_platforms, "--out", tmp_path / "locks"], tty=True)
    assert rc == 0, err.decode(errors="replace")
    assert b"\rsolving demo for linux-64 (1/2 platforms): 2 conda specs, rattler, 1 channel" \
        in err
    assert b"\rsolving demo for linux-aarch64 (2/2 platforms)" in err
    assert err.count(b"\r\x1b[K") >= 1  # erased before the report
    assert b"\r" not in out and b"solving" not in out  # the report alone on stdout
    assert b"2 conda packages" in out


@pytest.mark.parametrize("how", ["stderr a pipe", "--json -", "--quiet", "rank 1"])
def test_no_progress_where_nobody_watches(tmp_path: Path, two_platforms: Path,
                                          how: str) -> None:
    args: list[object] = ["build", two_platforms, "--out", tmp_path / "locks"]
    env = {"RANK": "1"} if how == "rank 1" else None
    if how in ("--json -", "--quiet"):
        args += how.split()
    rc, out, err = run(args, tty=how != "stderr a pipe", env=env)
    assert rc == 0, err.decode(errors="replace")
    assert b"solving" not in err and b"\r" not in err.replace(b"\r\n", b"")
    assert b"solving" not in out and b"\r" not in out
    if how == "--json -":
        assert json.loads(out)["status"] == "pass"
