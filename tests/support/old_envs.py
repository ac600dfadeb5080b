"""Real environments of the ages envcheck must run in: RAPIDS 22.08 to today's Dask.

Each is a venv on one of the machine's own Pythons (/root/.pyenv/versions/X.Y.*, or pythonX.Y
on PATH: no patch version is hard-coded) with dask/distributed pinned as that RAPIDS release
pins them, built from PyPI with uv and kept for the session under a directory keyed by the
pins (set ENVCHECK_TEST_ENV_CACHE to keep them across sessions). Their bytecode is compiled
when they are built, as pip does and uv does not by default: a process started in one (a Dask
worker, a Ray node whose agents must report within Ray's fixed 30 s) would otherwise compile
its imports from source each time, 2.5x slower to join on a loaded 2-core machine.
"""

from __future__ import annotations

import fcntl
import functools
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fetch import FetchFailed, fetch

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"

# What installing envcheck into a cluster's environment must leave exactly as it was.
PROTECTED = ("dask", "distributed", "numpy", "pandas", "cloudpickle", "msgpack", "tornado")


@dataclass(frozen=True)
class EnvSpec:
    name: str  # test id
    python: str  # "3.9"
    pins: tuple[str, ...]
    why: str = ""  # which RAPIDS release pins this stack
    with_pip: bool = False  # install envcheck with pip itself (as the README says), not uv


OLD_ENVS = (
    EnvSpec("dask-2022.7.1-py3.9", "3.9",
            ("dask==2022.7.1", "distributed==2022.7.1", "numpy<1.24"),
            "RAPIDS 22.08 (integration versions.yaml: dask/distributed ==2022.7.1)", True),
    EnvSpec("dask-2023.3.2-py3.8", "3.8",
            ("dask==2023.3.2", "distributed==2023.3.2.1", "numpy<1.25"),
            "RAPIDS 23.04 (dask ==2023.3.2, distributed ==2023.3.2.1)"),
    EnvSpec("dask-2024.1.1-py3.10", "3.10",
            ("dask==2024.1.1", "distributed==2024.1.1", "numpy<2"),
            "RAPIDS 24.04 (rapids-dask-dependency 24.04: dask ==2024.1.1)"),
    EnvSpec("dask-current-py3.12", "3.12", ("dask", "distributed", "numpy"), "today's release"),
)

OTHER_CLOUDPICKLE = "2.2.1"  # loads what cloudpickle 3 writes for simple tasks; still skew


def find_python(minor: str) -> str | None:
    """An interpreter of Python `minor` ("3.9") on this machine, newest patch first."""
    found = glob.glob(f"/root/.pyenv/versions/{minor}.*/bin/python{minor}")
    found.sort(key=lambda p: [int(x) for x in Path(p).parts[-3].split(".") if x.isdigit()])
    if found:
        return found[-1]
    return shutil.which(f"python{minor}")


def _cache_root() -> Path:
    root = os.environ.get("ENVCHECK_TEST_ENV_CACHE")
    if root:
        return Path(root)
    # one cache per test run: pytest-xdist's workers share it (their builds take the lock below)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")[:12] or str(os.getpid())
    return Path(tempfile.gettempdir()) / f"envcheck-test-envs-{run}"


@dataclass(frozen=True)
class OldEnv:
    spec: EnvSpec
    prefix: Path
    before: dict[str, str]  # distribution -> version, before envcheck went in
    after: dict[str, str]  # ... and after ({} when envcheck was not installed)

    @property
    def python(self) -> str:
        return str(self.prefix / "bin" / "python")

    @property
    def envcheck(self) -> str:
        return str(self.prefix / "bin" / "envcheck")


def installed(python: str) -> dict[str, str]:
    """Normalised distribution name -> version, as that interpreter sees them."""
    code = (
        "import importlib.metadata as m, json, re\n"
        "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version"
        " for d in m.distributions()}))"
    )
    out = subprocess.run(
        [python, "-I", "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    return json.loads(out.stdout)


def _run(cmd: list[str], what: str, timeout: float = 600) -> None:
    """A venv made or packages installed, retried as a download is (tests/support/fetch.py)."""
    try:
        fetch(cmd, what, timeout=timeout)
    except FetchFailed as e:
        pytest.fail(str(e), pytrace=False)


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """envcheck's code as installed into the envs: a change rebuilds cached ones."""
    h = hashlib.sha256()
    for path in sorted([ROOT / "pyproject.toml", *(ROOT / "envcheck").rglob("*.py")]):
        h.update(path.read_bytes())
    return h.hexdigest()


@functools.cache
def build_env(spec: EnvSpec, with_envcheck: bool = True, extra: tuple[str, ...] = ()) -> OldEnv:
    """The venv for `spec` (plus `extra` pins), then envcheck from this checkout into it."""
    python = find_python(spec.python)
    if python is None:
        pytest.skip(f"no Python {spec.python} on this machine (looked in /root/.pyenv, PATH)")
    source = _source_digest() if with_envcheck else ""
    key = hashlib.sha256(
        json.dumps([python, spec.pins, extra, with_envcheck, spec.with_pip, source, "pyc"]).encode()
    ).hexdigest()[:12]
    prefix = _cache_root() / f"{spec.name}-{key}"
    # concurrent test processes (pytest-xdist workers, a kept ENVCHECK_TEST_ENV_CACHE) build
    # each env once: the first takes the lock, the others wait and then find it done
    with locked(prefix):
        return _build_locked(spec, prefix, python, with_envcheck, extra)


def locked(path: Path):  # noqa: ANN202 - a file object used as a context manager
    """An exclusive lock on ``path``'s name across processes (``.NAME.lock`` beside it), held
    for the with-block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(path.parent / f".{path.name}.lock", "w")  # noqa: SIM115 - closed by with
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def install_checkout(cmd: list[str], what: str, timeout: float = 600) -> None:
    """Run ``cmd``, a pip or uv install that names this checkout, one at a time across test
    processes: setuptools builds in the source tree (build/, envcheck.egg-info), and two
    builds at once break each other (seen in CI: "envcheck.egg-info/tmp...: No such file")."""
    with locked(_cache_root() / "checkout-install"):
        _run(cmd, what, timeout)


def _build_locked(
    spec: EnvSpec, prefix: Path, python: str, with_envcheck: bool, extra: tuple[str, ...]
) -> OldEnv:
    done = prefix / ".envcheck-test-done.json"
    if done.exists() and (not with_envcheck or (prefix / "bin" / "envcheck").exists()):
        state = json.loads(done.read_text())
        return OldEnv(spec, prefix, state["before"], state["after"])
    shutil.rmtree(prefix, ignore_errors=True)
    seed = ("--seed",) if spec.with_pip else ()
    _run([str(UV), "venv", "-q", *seed, "--python", python, str(prefix)], f"uv venv {spec.name}")
    py = str(prefix / "bin" / "python")
    _run([str(UV), "pip", "install", "-q", "--compile-bytecode", "--python", py, *spec.pins,
          *extra],
         f"installing {' '.join(spec.pins + extra)}")
    before = installed(py)
    after: dict[str, str] = {}
    if with_envcheck:
        if spec.with_pip:  # the README's way: plain pip, from the checkout
            install_checkout(
                [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(ROOT)],
                "pip install envcheck")
        else:
            install_checkout([str(UV), "pip", "install", "-q", "--compile-bytecode", "--python",
                              py, str(ROOT)],
                             "uv pip install envcheck")
        after = installed(py)
    done.write_text(json.dumps({"before": before, "after": after}))
    return OldEnv(spec, prefix, before, after)
