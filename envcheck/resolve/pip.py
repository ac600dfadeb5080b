"""Resolve a recipe's ``pip:`` entries against PyPI with uv, for the solved Python and platform."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envcheck.errors import BadInput, EnvcheckError, Unreachable
from envcheck.lockfile.model import PipPackage
from envcheck.lockfile.names import PLATFORM_ARCH, pypi_name
from envcheck.resolve.solve import SolvedPackage

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPI = "https://pypi.org/simple"


def _uv() -> str:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        raise EnvcheckError("uv is not installed: pip install uv") from None


def target_platform(platform: str, system: Mapping[str, str]) -> tuple[str, list[str]]:
    """uv's --python-platform and the wheel platform tags it accepts, newest first."""
    if platform in PLATFORM_ARCH:
        a = PLATFORM_ARCH[platform]
        major, minor = (int(x) for x in system.get("glibc", "2.17").split(".")[:2])
        if major != 2 or minor < 17:
            raise BadInput(f"pip entries need glibc >= 2.17 on {platform} (manylinux_2_17)")
        tags = [f"manylinux_2_{m}_{a}" for m in range(minor, 16, -1)]
        tags += [f"manylinux2014_{a}"] + (
            [f"manylinux2010_{a}", f"manylinux1_{a}"] if a == "x86_64" else []
        )
        return f"{a}-manylinux_2_{minor}", tags + [f"linux_{a}"]
    if platform == "osx-arm64":
        return "aarch64-apple-darwin", [f"macosx_{v}_0_arm64" for v in range(14, 10, -1)]
    if platform == "osx-64":
        return "x86_64-apple-darwin", [f"macosx_10_{v}_x86_64" for v in range(15, 8, -1)]
    if platform == "win-64":
        return "x86_64-pc-windows-msvc", ["win_amd64"]
    raise BadInput(f"pip entries are not supported for platform {platform}")


def python_version(solved: Sequence[SolvedPackage]) -> str:
    for p in solved:
        if p.name == "python":
            return ".".join(p.version.split(".")[:2])
    raise BadInput("the recipe has pip entries but its solve holds no python")


def conda_python_pins(solved: Sequence[SolvedPackage]) -> dict[str, str]:
    """PyPI name -> version of every conda package that installs into Python."""
    pins: dict[str, str] = {}
    for p in solved:
        if p.name == "python" or not any(d.split(" ")[0] == "python" for d in p.depends):
            continue
        try:
            version = str(Version(p.version))
        except InvalidVersion:  # conda-only version strings cannot constrain a PyPI resolution
            continue
        pins[canonicalize_name(pypi_name(p.name))] = version
    return pins


def _best_wheel(wheels: list[dict[str, Any]], tags: list[Tag]) -> dict[str, Any] | None:
    rank = {t: i for i, t in enumerate(tags)}
    best: tuple[int, dict[str, Any]] | None = None
    for w in wheels:
        try:
            _, _, _, wtags = parse_wheel_filename(w["url"].rsplit("/", 1)[-1])
        except InvalidWheelFilename:
            continue
        score = min((rank[t] for t in wtags if t in rank), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, w)
    return best[1] if best else None


def _refuse_unfit_wheels(
    p: dict[str, Any], platform: str, glibc: str, py: str, index_url: str
) -> None:
    """No wheel fits because every linux wheel needs a newer glibc: say so, and what fits."""
    from envcheck.errors import Unsolvable
    from envcheck.resolve import el7

    files = [w["url"].rsplit("/", 1)[-1] for w in p.get("wheels", [])]
    found = el7.unfit_wheels(
        p["name"], str(p["version"]), files, glibc, platform, py,
        lambda name: el7.index_filenames(name, index_url),
    )  # fmt: skip
    if found:
        raise Unsolvable(f"pip: {found.line(glibc)}")


def resolve_pip(
    requirements: Sequence[str],
    solved: Sequence[SolvedPackage],
    platform: str,
    system: Mapping[str, str],
    *,
    index_url: str = PYPI,
    timeout: float = 300,
) -> list[PipPackage]:
    """Pin ``requirements`` and what they pull in, minus what the conda solve already holds."""
    if not requirements:
        return []
    py = python_version(solved)
    uv_platform, platform_tags = target_platform(platform, system)
    pins = conda_python_pins(solved)
    pyver = tuple(int(x) for x in py.split("."))
    tags = list(cpython_tags(pyver, platforms=platform_tags))
    tags += list(compatible_tags(pyver, platforms=platform_tags))
    with tempfile.TemporaryDirectory(prefix="envcheck-pip-") as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join(requirements) + "\n")
        cons = Path(tmp) / "constraints.txt"
        # what conda installs must stay as conda solved it
        cons.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
        cmd = [
            _uv(), "pip", "compile", str(req), "--constraint", str(cons),
            "--python-version", py, "--python-platform", uv_platform,
            "--format", "pylock.toml", "--no-header", "--quiet", "--index-url", index_url,
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Unreachable(
                f"pip resolution against {index_url} took over {timeout:.0f} s"
            ) from None
    if proc.returncode != 0:
        err = proc.stderr.strip()
        first = next((ln.strip() for ln in err.splitlines() if ln.strip()), "uv failed")
        if "error sending request" in err or "dns error" in err or "Failed to fetch" in err:
            raise Unreachable(f"PyPI cannot be reached from here: {first}", detail=err)
        raise EnvcheckError(f"pip entries cannot be resolved: {first}", detail=err)
    doc = tomllib.loads(proc.stdout)
    out: list[PipPackage] = []
    for p in doc.get("packages", []):
        name = canonicalize_name(p["name"])
        if name in pins:  # provided by a conda package
            continue
        dist = _best_wheel(p.get("wheels", []), tags) or p.get("sdist")
        if not dist and system.get("glibc"):
            _refuse_unfit_wheels(p, platform, system["glibc"], py, index_url)
        if not dist or "sha256" not in dist.get("hashes", {}):
            raise EnvcheckError(f"pip: no file with a sha256 for {p['name']} {p['version']}")
        out.append(PipPackage(name, str(p["version"]), dist["url"], dist["hashes"]["sha256"]))
    return out
