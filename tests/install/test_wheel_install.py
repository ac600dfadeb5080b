"""The built wheel, not the checkout: `pip wheel` of this tree installed into a fresh venv runs
every verb's --help, `envcheck image LOCK --print` (the Dockerfiles ship in the wheel) and README
command 1's verb, `envcheck verify cluster`, from a directory that holds no envcheck sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fetch import fetch
from tests.support.old_envs import ROOT, UV, install_checkout

pytestmark = pytest.mark.slow

VERBS = (("build",), ("install",), ("image",), ("diff",), ("why",), ("recipe", "new"),
         ("verify", "node"), ("verify", "cluster"), ("verify", "job"), ("verify", "ray"),
         ("slurm", "script"))


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel built from this tree and its core dependencies only."""
    root = tmp_path_factory.mktemp("wheel")
    install_checkout([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                      "--disable-pip-version-check", "-w", str(root / "dist"), str(ROOT)],
                     "pip wheel envcheck")
    (wheel,) = (root / "dist").glob("cluster_envcheck-*.whl")
    venv = root / "venv"
    for cmd in ([str(UV), "venv", "-q", "--python", sys.executable, str(venv)],
                [str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                 str(wheel)]):
        fetch(cmd, "the wheel's venv", timeout=600)
    return venv


def clean_env() -> dict[str, str]:
    """This process's environment without what would put the checkout on the venv's path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def envcheck(venv: Path, cwd: Path, *args: str, timeout: float = 120
             ) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "envcheck"), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=clean_env())


def test_the_wheel_alone_helps_every_verb_and_prints_an_image_build(wheel_venv, tmp_path):
    where = subprocess.run([str(wheel_venv / "bin" / "python"), "-c",
                            "import envcheck; print(envcheck.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60,
                           env=clean_env())
    assert where.stdout.startswith(str(wheel_venv)), where.stdout + where.stderr
    for verb in VERBS:
        proc = envcheck(wheel_venv, tmp_path, *verb, "--help")
        assert proc.returncode == 0, (verb, proc.stderr)
        assert proc.stdout.startswith(f"usage: envcheck {' '.join(verb)}"), proc.stdout[:200]
    lock = ROOT / "locks" / "pangeo-ml-2023.10.conda-lock.yml"
    proc = envcheck(wheel_venv, tmp_path, "image", str(lock), "--os", "rhel7", "--print")
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.split()
    assert command[0] in ("podman", "docker", "buildah") and "-f" in command, proc.stdout
    dockerfile = Path(command[command.index("-f") + 1])
    assert dockerfile.name == "Dockerfile.rhel7" and dockerfile.is_file(), proc.stdout
    assert (dockerfile.parent / "lock" / lock.name).is_file()


def test_readme_command_1_verifies_the_cluster_it_starts_from_the_wheel(wheel_venv, tmp_path):
    """`pip install . && envcheck verify cluster` as a new user runs it: the embedded
    LocalCluster (no GPU here) passes, and every check that cannot run says why."""
    out = tmp_path / "report.json"
    proc = envcheck(wheel_venv, tmp_path, "verify", "cluster", "--json", str(out), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["schema"] == "envcheck.report/1"
    assert report["status"] == "pass" and report["exit_code"] == 0, report["status"]
    assert report["environment"]["cluster"].startswith("embedded LocalCluster (no GPU")
    by = {}
    for r in report["results"]:
        by.setdefault(r["check"], []).append(r)
    assert by["workers"][0]["status"] == "pass" and " of " in by["workers"][0]["message"]
    assert by["skew"][0]["status"] == "pass"
    (pinning,) = by["pinning"]
    assert pinning["status"] == "skip" and "no GPU on any worker host" in pinning["message"]
    gpu_smoke = by["smoke.gpu-kernel"] + by["smoke.dask-cudf"]
    assert all(r["status"] == "skip" and "GPU" in r["message"] for r in gpu_smoke), gpu_smoke
    assert all(r["message"] for r in report["results"] if r["status"] == "skip")  # say why
    assert [r["status"] for r in by["smoke.submit"]] == ["pass"] * len(by["smoke.submit"])
    (table,) = report["tables"]
    assert table["columns"][:3] == ["package", "client", "scheduler"]
    assert "skip" in proc.stdout  # the verdict-first text was rendered as well
