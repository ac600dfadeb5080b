"""Make real conda packages for tests: a Python interpreter from a pyenv install, and noarch /
per-Python packages from PyPI wheels; index them with py-rattler and serve them over HTTP.

The packages are ordinary `.conda` archives (a stored zip of metadata.json, info-*.tar.zst and
pkg-*.tar.zst) with info/index.json, info/paths.json and info/files, as conda-build writes them.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import http.server
import io
import json
import os
import re
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import zstandard

TIMESTAMP_MS = 1_704_067_200_000  # fixed build time: reproducible archives
# Parts of a CPython install a test env never needs (test suite, GUI, static lib, caches):
# leaving them out keeps the package at a few MB and the fixture fast.
PYTHON_SKIP = re.compile(
    r"(^|/)(__pycache__|test|tests|idle_test|idlelib|tkinter|turtledemo|ensurepip|lib2to3"
    r"|site-packages|config-[^/]+|pkgconfig)(/|$)|^(include|share)/|\.a$|^bin/(2to3|idle|pip)"
)


@dataclass(frozen=True)
class Built:
    """One package file written into a channel."""

    name: str
    version: str
    subdir: str
    path: Path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tar_zst(members: Iterable[tuple[str, bytes | None, int, str | None]]) -> bytes:
    """A zstd-compressed tar of (name, data, mode, symlink target) members."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode, target in members:
            info = tarfile.TarInfo(name)
            info.mtime = TIMESTAMP_MS // 1000
            info.mode = mode
            if target is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = target
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    return zstandard.ZstdCompressor(level=3).compress(raw.getvalue())


def write_conda(
    out_dir: Path,
    index: dict,
    files: dict[str, tuple[bytes | None, int, str | None]],
    placeholder: str | None = None,
    link_json: dict | None = None,
) -> Path:
    """Write ``<name>-<version>-<build>.conda`` into ``out_dir`` from in-memory files.

    ``files`` maps a prefix-relative path to (data, mode, symlink target). Text files holding
    ``placeholder`` are marked for prefix replacement, as conda-build does.
    """
    paths = []
    for rel, (data, _mode, target) in sorted(files.items()):
        if target is not None:
            paths.append({"_path": rel, "path_type": "softlink", "size_in_bytes": 0})
            continue
        entry = {
            "_path": rel,
            "path_type": "hardlink",
            "sha256": _sha256(data or b""),
            "size_in_bytes": len(data or b""),
        }
        if placeholder and data and placeholder.encode() in data and b"\0" not in data[:8192]:
            entry.update(file_mode="text", prefix_placeholder=placeholder)
        paths.append(entry)
    info = {
        "info/index.json": json.dumps(index, indent=2, sort_keys=True).encode(),
        "info/paths.json": json.dumps({"paths": paths, "paths_version": 1}, indent=2).encode(),
        "info/files": "".join(f"{p}\n" for p in sorted(files)).encode(),
    }
    if link_json:
        info["info/link.json"] = json.dumps(link_json).encode()
    stem = f"{index['name']}-{index['version']}-{index['build']}"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.conda"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("metadata.json", json.dumps({"conda_pkg_format_version": 2}))
        z.writestr(f"pkg-{stem}.tar.zst", _tar_zst((r, d, m, t) for r, (d, m, t) in files.items()))
        z.writestr(f"info-{stem}.tar.zst", _tar_zst((r, d, 0o644, None) for r, d in info.items()))
    return path


def _index(name: str, version: str, build: str, subdir: str, depends: list[str], **extra) -> dict:
    arch = (
        {"subdir": "noarch"}
        if subdir == "noarch"
        else {"subdir": subdir, "arch": "x86_64", "platform": "linux"}
    )
    return {
        "name": name,
        "version": version,
        "build": build,
        "build_number": 0,
        "depends": depends,
        "license": "see the project",
        "timestamp": TIMESTAMP_MS,
        **arch,
        **extra,
    }


def _relocatable_runpath(data: bytes, old_lib: str) -> bytes:
    """Point an ELF RUNPATH at $ORIGIN/../lib in place (same length, NUL padded)."""
    old = old_lib.encode() + b"\0"
    new = b"$ORIGIN/../lib"
    if old not in data:
        return data
    return data.replace(old, new + b"\0" * (len(old) - len(new)))


def python_package(pyenv_root: Path, out_dir: Path) -> Built:
    """Package a pyenv CPython install (``/root/.pyenv/versions/X.Y.Z``) as ``python``.

    pyenv's interpreter is linked against its own libpython with an absolute RUNPATH; it is
    rewritten to ``$ORIGIN/../lib`` so the interpreter runs from any prefix. Text files that
    name the old prefix (scripts, sysconfig data) get conda's prefix replacement.
    """
    version = pyenv_root.name
    mm = ".".join(version.split(".")[:2])
    files: dict[str, tuple[bytes | None, int, str | None]] = {}
    for dirpath, dirnames, filenames in os.walk(pyenv_root):
        rel_dir = os.path.relpath(dirpath, pyenv_root)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if PYTHON_SKIP.search(rel) or name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                files[rel] = (None, 0o777, os.readlink(full))
                continue
            data = Path(full).read_bytes()
            if rel == f"bin/python{mm}":
                data = _relocatable_runpath(data, str(pyenv_root / "lib"))
            files[rel] = (data, os.stat(full).st_mode & 0o777, None)
    index = _index(
        "python",
        version,
        "h0_envcheck_test",
        "linux-64",
        [],
        python_site_packages_path=f"lib/python{mm}/site-packages",
    )
    files[f"lib/python{mm}/site-packages/README.txt"] = (b"site-packages\n", 0o644, None)
    path = write_conda(out_dir / "linux-64", index, files, placeholder=str(pyenv_root))
    return Built("python", version, "linux-64", path)


def _wheel_requires(metadata: str, python_mm: str) -> list[str]:
    """A wheel's Requires-Dist for ``python_mm`` (no extras), as conda match specs."""
    from packaging.requirements import Requirement

    out = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.partition(":")[2].strip())
        env = {
            "python_version": python_mm,
            "python_full_version": f"{python_mm}.0",
            "extra": "",
            "sys_platform": "linux",
            "platform_system": "Linux",
        }
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        spec = ",".join(str(s) for s in req.specifier)
        out.append(f"{conda_name(req.name)} {spec}".strip())
    return out


def conda_name(pypi_name: str) -> str:
    return re.sub(r"[-_.]+", "-", pypi_name).lower()


def wheel_package(wheel: Path, out_dir: Path, python_mm: str) -> Built:
    """Repackage a wheel: pure wheels as noarch: python, others for linux-64 and ``python_mm``."""
    from packaging.utils import parse_wheel_filename

    pypi_name, version, _, tags = parse_wheel_filename(wheel.name)
    name = conda_name(pypi_name)
    pure = all(t.abi == "none" and t.platform == "any" for t in tags)
    site = "site-packages" if pure else f"lib/python{python_mm}/site-packages"
    files: dict[str, tuple[bytes | None, int, str | None]] = {}
    metadata = ""
    with zipfile.ZipFile(wheel) as z:
        for item in z.infolist():
            if item.is_dir():
                continue
            data = z.read(item)
            if item.filename.endswith(".dist-info/METADATA"):
                metadata = data.decode()
            files[f"{site}/{item.filename}"] = (data, 0o644, None)
            if item.filename.endswith(".dist-info/WHEEL"):
                files[f"{site}/{item.filename[: -len('WHEEL')]}INSTALLER"] = (
                    b"conda\n",
                    0o644,
                    None,
                )
    depends = _wheel_requires(metadata, python_mm)
    if pure:
        depends.append("python >=3.8")
        index = _index(name, str(version), "py_0", "noarch", depends, noarch="python")
        subdir = "noarch"
    else:
        depends.append(f"python {python_mm}.*")
        build = f"py{python_mm.replace('.', '')}_0"
        index = _index(name, str(version), build, "linux-64", depends)
        subdir = "linux-64"
    path = write_conda(out_dir / subdir, index, files)
    return Built(name, str(version), subdir, path)


def index_channel(root: Path) -> None:
    """repodata.json for linux-64 and noarch, written by py-rattler's indexer."""
    from rattler.index import index_fs

    for sd in ("linux-64", "noarch"):
        (root / sd).mkdir(parents=True, exist_ok=True)
    asyncio.run(index_fs(root, write_zst=False, write_shards=False, force=True))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    chunk_delay_s = 0.0  # > 0: send files 64 KiB at a time with this pause (a slow mirror)

    def log_message(self, *args: object) -> None:
        pass

    def copyfile(self, source, outputfile) -> None:  # noqa: ANN001
        if not self.chunk_delay_s:
            return super().copyfile(source, outputfile)
        while chunk := source.read(1 << 16):
            outputfile.write(chunk)
            time.sleep(self.chunk_delay_s)


@contextmanager
def serve(root: Path, chunk_delay_s: float = 0.0) -> Iterator[str]:
    """Serve ``root`` on a free loopback port; yield its base URL."""
    cls = type("Handler", (_Quiet,), {"chunk_delay_s": chunk_delay_s})
    handler = functools.partial(cls, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
