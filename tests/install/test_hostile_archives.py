"""Archives whose members differ from their own metadata: info/paths.json lists one harmless
file, the archive holds more (an absolute member, a symlink out of the package, a file written
through that symlink). Each is exit 4 naming the package, and nothing of it stays in the cache:
no partial tree, no escaping symlink. Both formats: .conda and .tar.bz2."""

from __future__ import annotations

import bz2
import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.support.condapkg import TIMESTAMP_MS, _index, _tar_zst
from tests.support.install_world import envcheck
from tests.support.small_channels import pixi_lock, records

OK = b"ok\n"
Member = tuple[str, bytes | None, int, str | None]  # name, data, mode, symlink target


def _info(name: str) -> dict[str, bytes]:
    paths = [{"_path": "share/ok.txt", "path_type": "hardlink",
              "sha256": hashlib.sha256(OK).hexdigest(), "size_in_bytes": len(OK)}]
    return {
        "info/index.json": json.dumps(_index(name, "1.0", "0", "noarch", [])).encode(),
        "info/paths.json": json.dumps({"paths": paths, "paths_version": 1}).encode(),
        "info/files": b"share/ok.txt\n",
    }


def _tar(members: list[Member]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode, target in members:
            info = tarfile.TarInfo(name)
            info.mtime, info.mode = TIMESTAMP_MS // 1000, mode
            if target is not None:
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    return raw.getvalue()


def _package(root: Path, name: str, extra: list[Member], fmt: str) -> None:
    """A noarch package whose metadata lists share/ok.txt and whose archive adds ``extra``."""
    stem = f"{name}-1.0-0"
    folder = root / "noarch"
    folder.mkdir(parents=True, exist_ok=True)
    pkg: list[Member] = [("share/ok.txt", OK, 0o644, None), *extra]
    info: list[Member] = [(k, v, 0o644, None) for k, v in _info(name).items()]
    if fmt == "conda":
        with zipfile.ZipFile(folder / f"{stem}.conda", "w") as z:
            z.writestr("metadata.json", json.dumps({"conda_pkg_format_version": 2}))
            z.writestr(f"pkg-{stem}.tar.zst", _tar_zst(pkg))
            z.writestr(f"info-{stem}.tar.zst", _tar_zst(info))
    else:
        (folder / f"{stem}.tar.bz2").write_bytes(bz2.compress(_tar(info + pkg)))


@pytest.mark.parametrize("fmt", ["conda", "tar.bz2"])
@pytest.mark.parametrize("case", ["absolute member", "symlink out", "through the symlink"])
def test_an_archive_holding_more_than_its_metadata_is_exit_4_and_leaves_nothing(
    tmp_path: Path, case: str, fmt: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    extra: list[Member] = {
        "absolute member": [(str(outside / "abs.txt"), b"pwned\n", 0o644, None)],
        "symlink out": [("share/esc", None, 0o777, "../../../../../outside")],
        "through the symlink": [("share/esc", None, 0o777, str(outside)),
                                ("share/esc/through.txt", b"pwned\n", 0o644, None)],
    }[case]
    name = "evil-" + case.replace(" ", "-")
    root = tmp_path / "channel"
    _package(root, name, extra, fmt)
    lock = pixi_lock(tmp_path / "pixi.lock", root.as_uri(), records(root))
    cache, prefix = tmp_path / "cache", tmp_path / "env"
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache, timeout=120)
    assert done.returncode == 4, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "is refused" in lines[0], done.stderr
    assert name in lines[0] or "failed to unpack" in lines[0], lines[0]
    assert not prefix.exists()
    assert list(outside.iterdir()) == []
    left = [p for p in (cache / "pkgs").rglob("*")] if (cache / "pkgs").exists() else []
    assert not [p for p in left if name in p.name or p.is_symlink()], left
