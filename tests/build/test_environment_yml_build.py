"""`envcheck build environment.yml`: a real solve against a local channel, then --check."""

from __future__ import annotations

from pathlib import Path

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.lockfile.read import read_lock
from tests.support.channel import demo_channel


def test_environment_yml_solves_into_a_lock_that_checks_current(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    channel = demo_channel(tmp_path / "channel")
    env = tmp_path / "environment.yml"
    env.write_text(
        "name: rapids-demo\n"
        f"channels:\n  - {channel}\n  - nodefaults\n"
        "dependencies:\n  - python=3.9\n  - cuml=22.08\n"
    )
    out = tmp_path / "locks"
    # cuml needs __cuda: conda's own override names it, as `conda env create` reads it
    monkeypatch.setenv("CONDA_OVERRIDE_CUDA", "11.5")
    rc = main(["build", str(env), "--platform", "linux-64", "--out", str(out)])
    assert rc == ExitCode.OK, capsys.readouterr().err
    lock = read_lock(out / "rapids-demo.conda-lock.yml")
    assert {p.name: p.version for p in lock.packages}["dask"] == "2022.7.1"
    assert {p.platform for p in lock.packages} == {"linux-64"}
    check = ["build", "--check", str(env), "--platform", "linux-64", "--out", str(out)]
    assert main(check) == ExitCode.OK
