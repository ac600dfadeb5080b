"""A real Horovod 0.28.1 (its last release) with the CPU torch 2.13.0: a venv for the tests.

Horovod ships as an sdist only. Its CMakeLists.txt and horovod/torch/CMakeLists.txt ask for
C++14, and torch 2.x's headers refuse anything before C++17 ("#error C++17 or later compatible
compiler is required to use PyTorch"): both are changed to 17, then the wheel is built with
Gloo and PyTorch only (no MPI, TensorFlow, MXNet), against the venv's own torch
(--no-build-isolation), ~150 s on two cores. The wheel is kept under the test env cache,
keyed by its pins and build flags, so a run builds it once; the venv (torch, the wheel,
envcheck from this checkout) is keyed by those and envcheck's source, like
tests/support/old_envs.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.old_envs import (
    ROOT,
    UV,
    _cache_root,
    _run,
    _source_digest,
    find_python,
    install_checkout,
    locked,
)

HOROVOD = "0.28.1"
TORCH = "2.13.0"
PYTHON = "3.11"  # the local CPU torch wheel is cp311
BUILD_ENV = {
    "HOROVOD_WITH_PYTORCH": "1", "HOROVOD_WITH_GLOO": "1", "HOROVOD_WITHOUT_MPI": "1",
    "HOROVOD_WITHOUT_TENSORFLOW": "1", "HOROVOD_WITHOUT_MXNET": "1", "MAKEFLAGS": "-j2",
}
# (file in the sdist, line as shipped, line wanted)
PATCHES = (
    ("CMakeLists.txt", "set(CMAKE_CXX_STANDARD 14)", "set(CMAKE_CXX_STANDARD 17)"),
    ("horovod/torch/CMakeLists.txt", "    set(CMAKE_CXX_STANDARD 14)",
     "    set(CMAKE_CXX_STANDARD 17)"),
)


@dataclass(frozen=True)
class HorovodEnv:
    prefix: Path
    wheel: Path
    build_seconds: float  # 0.0 when the wheel came from the cache

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    @property
    def python(self) -> str:
        return str(self.bin / "python")


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:12]


def horovod_env() -> HorovodEnv:
    """The venv, built (and the wheel with it) unless the cache has them."""
    python = find_python(PYTHON)
    if python is None:
        raise RuntimeError(f"no Python {PYTHON} on this machine for torch {TORCH}'s wheel")
    pins = (f"torch=={TORCH}", f"horovod=={HOROVOD}", BUILD_ENV, PATCHES)
    prefix = _cache_root() / f"horovod-{HOROVOD}-{_key(python, pins, _source_digest())}"
    wheels = _cache_root() / f"horovod-wheel-{_key(python, pins)}"
    with locked(prefix):
        done = prefix / ".envcheck-test-done.json"
        if done.exists():
            state = json.loads(done.read_text())
            return HorovodEnv(prefix, Path(state["wheel"]), 0.0)
        shutil.rmtree(prefix, ignore_errors=True)
        _run([python, "-m", "venv", str(prefix)], "python -m venv (horovod)")
        py = str(prefix / "bin" / "python")
        tools = ["setuptools", "wheel"] + ([] if shutil.which("cmake") else ["cmake"])
        _run([py, "-m", "pip", "install", "-q", f"torch=={TORCH}", *tools],
             f"pip install torch=={TORCH}")
        with locked(wheels):
            wheel, seconds = _wheel(py, wheels)
        install_checkout([py, "-m", "pip", "install", "-q", str(wheel), str(ROOT)],
                         "pip install the horovod wheel and envcheck", timeout=900)
        done.write_text(json.dumps({"wheel": str(wheel)}))
        return HorovodEnv(prefix, wheel, seconds)


def _wheel(py: str, out: Path) -> tuple[Path, float]:
    """The cached wheel, or one built now with `py` (a venv holding torch): (path, seconds)."""
    found = sorted(out.glob(f"horovod-{HOROVOD}-*.whl"))
    if found:
        return found[0], 0.0
    t0 = time.monotonic()
    work = out.parent / f"{out.name}.build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _run([py, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
          f"horovod=={HOROVOD}", "-d", str(work)], f"pip download horovod=={HOROVOD}")
    with tarfile.open(work / f"horovod-{HOROVOD}.tar.gz") as tar:
        tar.extractall(work, filter="data")
    src = work / f"horovod-{HOROVOD}"
    for name, old, new in PATCHES:
        path = src / name
        lines = path.read_text().splitlines(keepends=True)
        hits = [i for i, ln in enumerate(lines) if ln.rstrip("\n") == old]
        if len(hits) != 1:
            raise RuntimeError(f"{name}: expected one line {old!r}, found {len(hits)}")
        lines[hits[0]] = new + "\n"
        path.write_text("".join(lines))
    env = {**os.environ, **BUILD_ENV, "PATH": f"{Path(py).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [py, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w",
         str(work / "dist"), str(src)],
        capture_output=True, text=True, timeout=1800, env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building horovod {HOROVOD} failed: {proc.stderr[-2000:]}")
    [built] = (work / "dist").glob("horovod-*.whl")
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / built.name
    shutil.move(str(built), wheel)
    shutil.rmtree(work, ignore_errors=True)
    return wheel, time.monotonic() - t0


OTHER_TORCH = "2.14.1"  # PyPI's CUDA build: imports without a GPU, another ABI than 2.13.0
# the machine image's local index holds torch 2.14.1 and its nvidia-* wheels (3.8 GB): read
# first where present, PyPI for the rest (and for everything on a machine without it)
LOCAL_INDEX = Path("/opt/pypi-more/simple")


def beside_other_torch(env: HorovodEnv) -> HorovodEnv:
    """A second venv: the same Horovod wheel (built against torch 2.13.0+cpu) installed beside
    torch 2.14.1, as after a `pip install -U torch` in a working Horovod env."""
    python = find_python(PYTHON)
    pins = (f"torch=={OTHER_TORCH}", env.wheel.name)
    prefix = _cache_root() / f"horovod-other-torch-{_key(python, pins, _source_digest())}"
    with locked(prefix):
        done = prefix / ".envcheck-test-done.json"
        if done.exists():
            return HorovodEnv(prefix, env.wheel, 0.0)
        shutil.rmtree(prefix, ignore_errors=True)
        _run([str(UV), "venv", "-q", "--python", str(python), str(prefix)],
             "uv venv (horovod beside another torch)")
        index = (["--extra-index-url", LOCAL_INDEX.as_uri(), "--index-strategy",
                  "unsafe-best-match"] if LOCAL_INDEX.is_dir() else [])
        install_checkout(
            [str(UV), "pip", "install", "-q", "--python", str(prefix / "bin" / "python"),
             *index, f"torch=={OTHER_TORCH}", str(env.wheel), str(ROOT)],
            f"uv pip install torch=={OTHER_TORCH}, the horovod wheel and envcheck", timeout=900)
        done.write_text(json.dumps({"wheel": str(env.wheel)}))
        return HorovodEnv(prefix, env.wheel, 0.0)
