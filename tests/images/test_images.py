"""Dockerfile.rhel7 built for real with podman (chroot isolation) from
local Debian bookworm bases made with debootstrap (no registry can be reached), from a lock
`envcheck build` wrote against the served test channel (Python 3.9, dask 2022.7's successor
line 2024.8 for 3.9: the RAPIDS 22.08 shape); the image runs its own check. Dockerfile.centos7's
build command and context are checked without an engine below.

The bases stand in for the EL7 images (BASE_IMAGE) and a Python image (BUILDER_IMAGE): the
builder base is minbase + python3 + venv + CA certificates (this machine's bundle, so PyPI is
reachable through its proxy), the runtime base the same without Python. They are made once
and kept in $ENVCHECK_TEST_BASES (default /var/cache/envcheck-tests), as tarballs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from envcheck import __version__
from tests.support.base_images import BASES_VERSION, base_tars
from tests.support.fetch import FetchFailed
from tests.support.install_world import World

pytestmark = pytest.mark.slow

BUILDER = f"localhost/envcheck-test-builder:{BASES_VERSION}"
RUNTIME = f"localhost/envcheck-test-runtime:{BASES_VERSION}"
TOOLS = ("debootstrap", "podman", "runc")
NO_GPU = [
    "verify",
    "node",
    "--prefix",
    "/opt/env",
    "--lock",
    "/opt/envcheck/share/env.lock",
    "--expect-gpus",
    "0",
]
@dataclass(frozen=True)
class Engine:
    env: dict[str, str]  # podman's configuration: storage, runtime, chroot isolation

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["podman", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _engine(root: Path, driver: str) -> Engine:
    (root / "storage.conf").write_text(
        f'[storage]\ndriver = "{driver}"\ngraphroot = "{root}/storage"\nrunroot = "{root}/run"\n'
    )
    (root / "containers.conf").write_text(
        '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n'
        '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
    )
    env = dict(
        os.environ,
        CONTAINERS_STORAGE_CONF=str(root / "storage.conf"),
        CONTAINERS_CONF=str(root / "containers.conf"),
        BUILDAH_ISOLATION="chroot",
    )
    return Engine(env)


@dataclass(frozen=True)
class Images:
    engine: Engine
    world: World
    timings: dict[str, float]


@pytest.fixture(scope="session")
def images(py39_world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Images]:
    # root and TOOLS: checked for the `image` kind in tests/conftest.py
    timings: dict[str, float] = {}
    t = time.monotonic()
    try:
        builder_tar, runtime_tar = base_tars()
    except FetchFailed as e:
        pytest.fail(str(e), pytrace=False)
    timings["bases"] = time.monotonic() - t
    root = tmp_path_factory.mktemp("podman")
    t = time.monotonic()
    for driver in ("overlay", "vfs"):  # overlay where the kernel allows it: vfs copies each layer
        engine = _engine(root, driver)
        done = engine.run(
            "import",
            "--change",
            "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
            "--change",
            "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
            str(builder_tar),
            BUILDER,
        )
        if done.returncode == 0:
            break
        shutil.rmtree(root / "storage", ignore_errors=True)
    assert done.returncode == 0, done.stderr
    done = engine.run("import", str(runtime_tar), RUNTIME)
    assert done.returncode == 0, done.stderr
    timings["import"] = time.monotonic() - t
    yield Images(engine, py39_world, timings)
    # images and layers, a few hundred MB: removed in the background (it takes ~50 s on a
    # loaded machine), the session does not wait for it
    subprocess.Popen(
        ["rm", "-rf", str(root)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _image(images: Images, os_name: str, lock: Path, tag: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "envcheck",
            "image",
            str(lock),
            "--os",
            os_name,
            "--tag",
            tag,
            "--builder-image",
            BUILDER,
            "--base-image",
            RUNTIME,
            "--engine",
            "podman",
        ],
        env=images.engine.env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_image_builds_runs_and_passes_its_own_check(images: Images) -> None:
    """Dockerfile.rhel7. Dockerfile.centos7 differs only in BASE_IMAGE's default and its title
    (tests/unit/test_dockerfiles.py fails when they drift apart), and both get the same local
    base here: building it too would build the same image twice."""
    os_name = "rhel7"
    tag = f"localhost/envcheck-test/py39:{os_name}"
    t = time.monotonic()
    done = _image(images, os_name, images.world.lock, tag)
    build_s = time.monotonic() - t
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert f"built {tag} ({os_name})" in done.stdout
    engine = images.engine
    # the image's own check, without GPU expectations, as an unprivileged user
    run = engine.run("run", "--rm", tag, *NO_GPU)
    assert run.returncode == 0, run.stdout + run.stderr
    inspect = engine.run("image", "inspect", tag)
    info = json.loads(inspect.stdout)[0]
    labels = info["Config"]["Labels"] if "Config" in info else info["Labels"]
    lock_sha = hashlib.sha256(images.world.lock.read_bytes()).hexdigest()
    assert labels["io.envcheck.recipe"] == "py39-dask"
    assert labels["io.envcheck.lock-sha256"] == lock_sha
    assert labels["io.envcheck.version"] == __version__
    print(
        f"\n{os_name}: built in {build_s:.1f} s, {info['Size'] / 1e6:.0f} MB "
        f"(bases {images.timings['bases']:.1f} s, import {images.timings['import']:.1f} s)"
    )
    who = engine.run("run", "--rm", "--entrypoint", "id", tag, "-u")
    assert who.stdout.strip() == "1000"
    py = engine.run(
        "run",
        "--rm",
        "--entrypoint",
        "/opt/env/bin/python",
        tag,
        "-c",
        "import sys, dask, distributed; print(sys.version.split()[0], dask.__version__)",
    )
    assert py.stdout.split() == [images.world.python_version, "2024.8.0"], py.stderr
    # the default command expects a GPU: here, with none, it must fail and say so
    default = engine.run("run", "--rm", "--env", "COLUMNS=200", tag)
    assert default.returncode == 2, default.stdout + default.stderr
    assert re.search(r"^fail +gpus\b.*\n +expected 1 GPU", default.stdout, re.M), default.stdout


def test_lock_with_one_changed_hash_fails_the_build_naming_the_package(
    images: Images, tmp_path: Path
) -> None:
    from envcheck.lockfile.read import read_lock

    dask = next(p for p in read_lock(images.world.lock).packages if p.name == "dask")
    forged = "0" * 64
    lock = tmp_path / "forged.conda-lock.yml"
    lock.write_text(images.world.lock.read_text().replace(dask.sha256, forged))
    done = _image(images, "rhel7", lock, "localhost/envcheck-test/forged:rhel7")
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout + done.stderr
    named = "conda package dask 2024.8.0 (dask-2024.8.0-py_0.conda): sha256 mismatch"
    assert f"{named}: lock says {forged}" in out
    assert (
        images.engine.run("image", "exists", "localhost/envcheck-test/forged:rhel7").returncode == 1
    )


def test_without_an_engine_the_command_is_printed_and_exit_is_8(
    py39_world: World, tmp_path: Path
) -> None:
    (tmp_path / "bin").mkdir()
    env = dict(os.environ, PATH=str(tmp_path / "bin"))
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", "image", str(py39_world.lock), "--os", "centos7"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 8, done.stderr
    line = done.stdout.strip()
    assert line.startswith("podman build -f ") and "Dockerfile.centos7" in line
    lock_sha = hashlib.sha256(py39_world.lock.read_bytes()).hexdigest()
    for arg in (
        "LOCK=lock/py39-dask.conda-lock.yml",
        "RECIPE=py39-dask",
        f"LOCK_SHA256={lock_sha}",
        f"ENVCHECK_VERSION={__version__}",
    ):
        assert f"--build-arg={arg}" in line
    context = Path(line.split()[-1])
    assert (
        context / "lock" / "py39-dask.conda-lock.yml"
    ).read_bytes() == py39_world.lock.read_bytes()
    assert (context / "envcheck" / "cli.py").is_file() and (context / "pyproject.toml").is_file()
    assert "not found" in done.stderr
