"""UCX: the Python binding installed, the UCX version and its transports (`ucx_info`)."""

from __future__ import annotations

import os
import re
import shutil
import sys

from .caches import _cached, dirs_key
from .model import UcxFacts
from .packages import _site_dirs
from .probes import _tail

_UCX_MODULES = (("ucxx", ("ucxx",)), ("ucp", ("ucx-py",)))
_UCX_LIB_PACKAGES = ("libucx", "ucx")  # pip wheel libucx-cuXX, conda package ucx


def _by_prefix(packages: dict[str, str], stems: tuple[str, ...]) -> str:
    """Version of the first package named stem or stem-cuXX (RAPIDS wheels carry a suffix)."""
    for name, version in packages.items():
        for stem in stems:
            if name == stem or (
                name.startswith(stem) and name[len(stem) : len(stem) + 3] == "-cu"
                and name[len(stem) + 3 :].isdigit()
            ):
                return version
    return ""


def _ucx_facts(
    python_packages: dict[str, str], packages: dict[str, str], timeout: float
) -> UcxFacts:
    """Which UCX Python binding is installed, the UCX version and its transports.

    The binding is found with find_spec, not imported: importing ucxx loads libucx and CUDA
    into the caller (a Dask worker), and takes seconds. Whether it really imports is the
    "imports" probe's job (a child process). Transports come from `ucx_info -d`.
    """
    module = module_version = ""
    allpkgs = {**packages, **python_packages}
    # Where the bindings and the libucx wheel are depends on sys.path's directories (a new
    # package is a new entry in one) and on the import machinery: cached on both.
    key = dirs_key(sys.path)
    if key is not None:
        key = (key, tuple(map(id, sys.meta_path)), *(m in sys.modules for m, _ in _UCX_MODULES))
    found, wheel_version = _cached("ucx-lookup", key, _ucx_lookup)
    for mod, dists in _UCX_MODULES:
        if mod == found:
            module, module_version = mod, _by_prefix(allpkgs, dists)
    ucx_version = _by_prefix(allpkgs, _UCX_LIB_PACKAGES) or wheel_version
    cmd = _ucx_info_command()
    if cmd is None:
        error = "" if not module else "ucx_info not found (PATH, <prefix>/bin, libucx wheel)"
        return UcxFacts(module, module_version, ucx_version, (), error)
    exe, env = cmd
    import subprocess  # only where ucx_info is found

    try:
        out = subprocess.run(
            [exe, "-v", "-d"], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return UcxFacts(module, module_version, ucx_version, (), f"ucx_info timed out ({exe})")
    except OSError as e:
        return UcxFacts(module, module_version, ucx_version, (), f"ucx_info failed: {e}")
    transports, version = parse_ucx_info(out.stdout)
    error = "" if out.returncode == 0 else f"ucx_info exited {out.returncode}: {_tail(out.stderr)}"
    return UcxFacts(module, module_version, version or ucx_version, transports, error)


def _ucx_lookup() -> tuple[str, str]:
    """(the first UCX binding find_spec finds or "", the libucx wheel's UCX version or "")."""
    import importlib.util

    for mod, _ in _UCX_MODULES:
        try:
            if importlib.util.find_spec(mod) is not None:
                return mod, _libucx_wheel_version()
        except (ImportError, ValueError):
            continue
    return "", _libucx_wheel_version()


def parse_ucx_info(text: str) -> tuple[tuple[str, ...], str]:
    """(sorted transports, UCX version) from `ucx_info -v -d` output."""
    transports = sorted(set(re.findall(r"^#\s*Transport:\s*(\S+)", text, re.M)))
    m = re.search(r"^#\s*(?:Library|UCT) version:\s*(\S+)", text, re.M)
    return tuple(transports), (m[1] if m else "")


def _libucx_wheel_version() -> str:
    """UCX version bundled in RAPIDS' libucx wheel (libucx/UCX_VERSION.txt), '' without it."""
    for base in _site_dirs():
        try:
            with open(os.path.join(base, "libucx", "UCX_VERSION.txt")) as f:
                return f.read().strip()
        except OSError:
            continue
    return ""


def _ucx_info_command() -> tuple[str, dict[str, str] | None] | None:
    exe = shutil.which("ucx_info") or shutil.which("ucx_info", path=os.path.join(sys.prefix, "bin"))
    if exe:
        return exe, None
    # the libucx wheel ships bin/ucx_info next to lib/, without an rpath to it
    for base in _site_dirs():
        cand = os.path.join(base, "libucx", "bin", "ucx_info")
        if os.access(cand, os.X_OK):
            env = dict(os.environ)
            lib = os.path.join(base, "libucx", "lib")
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (lib, env.get("LD_LIBRARY_PATH", "")) if p
            )
            return cand, env
    return None
