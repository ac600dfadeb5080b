"""One exit code for one situation, whichever verb meets it (docs/exit-codes.md): a registry,
channel, package server or scheduler that cannot be reached exits 7; a system envcheck needs
that is not there (no Slurm on this machine) exits 3. Real processes, real refused ports."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "locks" / "pangeo-ml-2023.10.conda-lock.yml"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def _build(tmp: Path) -> list[str]:
    recipe = tmp / "remote.yaml"  # .invalid never resolves (RFC 2606)
    recipe.write_text("name: remote\nchannels: ['https://conda.example.invalid/conda-forge']\n"
                      "platforms: [linux-64]\ndependencies: [python]\n")
    return ["build", str(recipe), "--out", str(tmp / "locks")]


def _install(tmp: Path) -> list[str]:
    lock = tmp / "gone.conda-lock.yml"
    lock.write_text(LOCK.read_text().replace("https://conda.anaconda.org",
                                             f"http://127.0.0.1:{_closed_port()}"))
    return ["install", str(lock), "--prefix", str(tmp / "env"), "--cache-dir", str(tmp / "c")]


def _image(tmp: Path) -> list[str]:
    registry = f"127.0.0.1:{_closed_port()}/nothing:1"
    return ["image", str(LOCK), "--os", "rhel7", "--builder-image", registry,
            "--base-image", registry, "--tag", "envcheck-exit-table:1"]


def _cluster(tmp: Path) -> list[str]:
    return ["verify", "cluster", f"tcp://127.0.0.1:{_closed_port()}", "--timeout", "2"]


def _slurm_without_sbatch(tmp: Path) -> list[str]:
    return ["slurm", "script", "--submit", "--shared-dir", str(tmp)]


TABLE = [
    # (the verb's argv for the situation, PATH: None keeps this one, "" an empty folder, exit)
    pytest.param(_build, None, ExitCode.UNREACHABLE, id="unreachable-channel-build"),
    pytest.param(_install, None, ExitCode.UNREACHABLE, id="unreachable-server-install",
                 marks=pytest.mark.install),
    pytest.param(_image, None, ExitCode.UNREACHABLE, id="unreachable-registry-image",
                 marks=pytest.mark.image),
    pytest.param(_cluster, None, ExitCode.UNREACHABLE, id="unreachable-scheduler-verify-cluster"),
    pytest.param(_slurm_without_sbatch, "", ExitCode.ERROR, id="no-slurm-here-slurm-submit"),
]


@pytest.mark.parametrize(("argv", "path", "code"), TABLE)
def test_one_situation_one_exit_code(tmp_path: Path, argv, path: str | None,  # noqa: ANN001
                                     code: ExitCode) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if path is not None:
        (tmp_path / "bin").mkdir()
        env["PATH"] = str(tmp_path / "bin")
    proc = subprocess.run([sys.executable, "-m", "envcheck", *argv(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
                          check=False)
    assert proc.returncode == code, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("envcheck: ") and "Traceback" not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs sbatch (Slurm's client)")
def test_sbatch_without_a_configuration_exits_3_not_4(tmp_path: Path) -> None:
    """sbatch installed, no slurm.conf and no configless controller: nothing the user typed is
    wrong, the Slurm it needs is not here."""
    if Path("/etc/slurm/slurm.conf").exists() or os.environ.get("SLURM_CONF"):
        pytest.skip("this machine has a Slurm configuration")
    proc = subprocess.run([sys.executable, "-m", "envcheck", *_slurm_without_sbatch(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert proc.returncode == ExitCode.ERROR, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "no Slurm configuration here" in line
