"""Every fixture lock, read through every verb that reads locks, gives the same packages.

The lock files are the shipped locks (locks/) and the real ones in tests/data: conda-lock
version 1 files, conda explicit files and a pixi.lock (format 7). The entry points: the one
reader (``envcheck.lockfile.read_lock``), py-rattler's reading of it that install links
(``records=True``), why's graph, diff, verify node's ``--lock`` and image's lock facts.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import BadInput
from envcheck.lockfile import read_lock
from envcheck.lockfile.model import Lock
from envcheck.provision.image.context import plan_image
from envcheck.resolve.changes import version_build
from envcheck.resolve.diff.pipeline import lock_diff
from envcheck.resolve.lockgraph import read_graph
from envcheck.resolve.why.pipeline import why_lock
from envcheck.verify.expect_options import expectations_from_options
from envcheck.verify.expectations import ExpectOptions

ROOT = Path(__file__).resolve().parents[2]
LOCKS = sorted(
    p
    for d in (ROOT / "locks", ROOT / "tests" / "data")
    for p in d.iterdir()
    if p.name.endswith((".conda-lock.yml", ".lock"))
)
PIXI = ROOT / "tests" / "data" / "holoviz_holoviews_fb85eeb_pixi.lock"
Key = tuple[str, str, str, str]  # manager, name, version, build


@functools.cache
def _read(path: Path) -> Lock:
    return read_lock(path)


def _keys(packages) -> dict[str, set[Key]]:
    out: dict[str, set[Key]] = {}
    for p in packages:
        out.setdefault(p.platform, set()).add((p.manager, p.name, p.version, p.build))
    return out


def test_every_kind_of_lock_is_here() -> None:
    formats = {_read(p).format for p in LOCKS}
    assert formats == {"conda-lock", "explicit", "pixi"}, LOCKS
    assert len(LOCKS) >= 8


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_the_reader_gives_every_platform_and_the_edges(path: Path) -> None:
    lock = _read(path)
    assert lock.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert set(_keys(lock.packages)) <= set(lock.platforms)
    for platform in lock.platforms:
        only = read_lock(path, platform)
        assert only.platform == platform and lock.platform == ""
        assert _keys(only.packages) == {platform: _keys(lock.packages)[platform]}
    if lock.format != "explicit":  # an explicit file records no dependencies
        assert sum(len(p.requires) for p in lock.packages) > len(lock.packages)
    with pytest.raises(BadInput, match="has no packages for platform no-such-64"):
        read_lock(path, "no-such-64")


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_install_reading_agrees(path: Path) -> None:
    """py-rattler's records of each platform are the reader's binary packages (a pixi source
    package, built by pixi, has no record to link)."""
    lock = _read(path)
    if lock.format == "explicit":
        with pytest.raises(BadInput, match="not a readable conda-lock or pixi lock"):
            read_lock(path, lock.platforms[0], records=True)
        return
    for platform in lock.platforms:
        installed = read_lock(path, platform, records=True)
        assert installed.sha256 == lock.sha256 and installed.format == lock.format
        assert installed.platform == platform
        assert installed.platforms == tuple(sorted(lock.platforms))
        binary = [p for p in lock.packages if p.url and p.platform == platform]
        assert _keys(installed.packages) == _keys(binary)
        assert len(installed.records) == sum(p.manager == "conda" for p in binary)
        by_name = {p.name: p for p in binary}
        for p in installed.packages:  # the same files, hashes and edges
            same = by_name[p.name]
            assert (p.url, p.sha256 or same.sha256, p.md5 or same.md5) == (
                same.url, same.sha256, same.md5
            )  # fmt: skip
            if p.manager == "conda":
                assert set(p.requires) == set(same.requires), p.name


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_why_graph_agrees(path: Path) -> None:
    lock = _read(path)
    graph = read_graph(path)
    assert {plat: set(nodes) for plat, nodes in graph.platforms.items()} == {
        plat: {k[1] for k in keys} for plat, keys in _keys(lock.packages).items()
    }
    for plat, nodes in graph.platforms.items():
        assert _keys(nodes.values()) == {plat: _keys(lock.packages)[plat]}
    plat, nodes = min(graph.platforms.items())  # why itself: one platform (it reads the lock)
    target = max(nodes.values(), key=lambda p: (len(p.requires), p.name))
    chains, _ = why_lock(target.name, path, None, None, plat)
    assert chains and all(chain[0] == target.label() for _, chain in chains)


@pytest.mark.parametrize(
    ("old", "new"), list(zip(LOCKS, LOCKS[1:] + LOCKS[:1], strict=True)), ids=lambda p: p.name
)
def test_diff_agrees(old: Path, new: Path) -> None:
    """The changes diff reports, applied to the old lock's packages, give the new lock's."""

    def versions(lock: Lock) -> dict[tuple[str, str, str], str]:
        return {
            (p.platform, p.manager, p.name): version_build(p.version, p.build)
            for p in lock.packages
        }

    have = versions(_read(old))
    for c in lock_diff(old, new):
        key = (c.platform, c.manager, c.name)
        assert have.get(key, "") == c.old
        if c.kind == "removed":
            del have[key]
        else:
            have[key] = c.new
    assert have == versions(_read(new))


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_verify_node_lock_agrees(path: Path) -> None:
    exp = expectations_from_options(ExpectOptions(lock=path))
    assert _keys(exp.lock_packages) == _keys(_read(path).packages)
    assert exp.lock_path == str(path)


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_image_reading_agrees(path: Path) -> None:
    lock = _read(path)
    build = plan_image("centos7", path, None, platform=lock.platforms[0])
    assert build.build_args["LOCK_SHA256"] == lock.sha256
    assert build.build_args["PLATFORM"] == lock.platforms[0]
    assert build.build_args["RECIPE"] == (lock.recipe or path.name.split(".")[0])
    with pytest.raises(BadInput, match="no packages for platform"):
        plan_image("centos7", path, None, platform="no-such-64")


def test_verify_node_checks_a_pixi_lock(tmp_path: Path) -> None:
    """The pixi.lock's packages of this platform are checked (this test's Python is no conda
    environment, so the check fails saying so)."""
    import json

    from envcheck.verify.facts import conda_platform

    report = tmp_path / "r.json"
    rc = main(["verify", "node", "--quiet", "--no-plugins", "--lock", str(PIXI), "--json",
               str(report)])  # fmt: skip
    assert rc == 2
    [packages] = [r for r in json.loads(report.read_text())["results"] if r["check"] == "packages"]
    here = sum(p.manager == "conda" for p in _read(PIXI).packages if p.platform == conda_platform())
    assert f"the lock lists {here} conda packages" in packages["message"]


def test_install_reading_takes_this_machines_platform_by_default() -> None:
    from envcheck.verify.facts import conda_platform

    installed = read_lock(PIXI, records=True)
    assert installed.platform == conda_platform()
    assert {p.platform for p in installed.packages} == {conda_platform()}
