"""Small channels of made-up conda packages and pixi locks of their records, for install tests
that need a package of a particular shape: many files, hostile metadata, a tiny env.

Packages are real `.conda` archives (tests/support/condapkg.py), indexed by py-rattler; locks are
written by py-rattler's LockFile from the channel's own records (so they carry its hashes).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.support.condapkg import _index, index_channel, write_conda

Files = dict[str, tuple[bytes | None, int, str | None]]


def noarch_package(root: Path, name: str, files: Files, version: str = "1.0") -> Path:
    """A generic noarch package ``name`` holding ``files`` (path -> data, mode, link target)."""
    return write_conda(root / "noarch", _index(name, version, "0", "noarch", []), files)


def many_files(n: int, size: int = 64) -> Files:
    """``n`` small files spread over directories of 500 (a package that takes long to link)."""
    return {
        f"share/many/d{i // 500:03d}/f{i:05d}.txt": (f"{i:0{size}d}\n".encode(), 0o644, None)
        for i in range(n)
    }


def records(root: Path, url: str | None = None) -> list:
    """The channel's records (indexed now), with URLs under ``url`` (default: file://)."""
    import rattler

    index_channel(root)
    out = []
    for sd in ("noarch", "linux-64"):
        data = rattler.RepoData.from_path(str(root / sd / "repodata.json"))
        out += data.into_repo_data(rattler.Channel(url or root.resolve().as_uri()))
    return out


def pixi_lock(path: Path, channel: str, recs: Sequence) -> Path:
    """A pixi.lock for linux-64 holding ``recs`` as they are."""
    import rattler

    lock = rattler.LockFile([rattler.LockPlatform("linux-64")])
    lock.set_channels("default", [rattler.LockChannel(channel)])
    for r in recs:
        lock.add_conda_package("default", lock.platforms()[0], r)
    lock.to_path(path)
    return path


def world_records(lock: Path) -> list:
    """The conda records of a conda-lock file (the py39 world's lock)."""
    import rattler

    env = rattler.LockFile.from_path(lock).default_environment()
    return list(env.conda_repodata_records_for_platform(env.platforms()[0]))
