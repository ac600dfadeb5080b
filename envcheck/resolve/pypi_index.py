"""A package index's file list (PEP 691 JSON simple API): which file of a version a target
installs, and the newest release that has one. Read in parallel, one page per project."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

JSON = "application/vnd.pypi.simple.v1+json"
PAGE_TIMEOUT_S = 15.0
MAX_PARALLEL = 16


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str
    version: Version
    tags: frozenset[Tag]  # empty for an sdist
    requires_python: str
    yanked: bool

    def runs_on(self, python: str) -> bool:
        if not self.requires_python:
            return True
        try:
            return SpecifierSet(self.requires_python).contains(f"{python}.0", prereleases=True)
        except InvalidSpecifier:  # an unreadable Requires-Python: pip and uv ignore it too
            return True


def _file(entry: Mapping[str, object], name: str) -> IndexFile | None:
    fn = str(entry.get("filename", ""))
    sha = (entry.get("hashes") or {}).get("sha256")  # type: ignore[union-attr]
    try:
        if fn.endswith(".whl"):
            wname, version, _, tags = parse_wheel_filename(fn)
        else:
            wname, version = parse_sdist_filename(fn)
            tags = frozenset()
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    if canonicalize_name(wname) != name or not isinstance(sha, str):
        return None
    return IndexFile(
        fn,
        str(entry.get("url", "")),
        sha,
        version,
        frozenset(tags),
        str(entry.get("requires-python") or ""),
        bool(entry.get("yanked")),
    )


def index_files(name: str, index_url: str, timeout: float = PAGE_TIMEOUT_S) -> list[IndexFile] | None:
    """Every file the index lists for a project; None when the page cannot be read as JSON."""
    name = canonicalize_name(name)
    req = urllib.request.Request(f"{index_url.rstrip('/')}/{name}/", headers={"Accept": JSON})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            if JSON not in r.headers.get("Content-Type", ""):
                return None
            doc = json.loads(r.read())
    except (OSError, ValueError):
        return None
    files = (_file(e, name) for e in doc.get("files", []) if isinstance(e, dict))
    return [f for f in files if f is not None]


def index_pages(names: Iterable[str], index_url: str) -> dict[str, list[IndexFile] | None]:
    names = sorted({canonicalize_name(n) for n in names})
    if not names:
        return {}
    with ThreadPoolExecutor(min(MAX_PARALLEL, len(names))) as pool:
        pages = pool.map(lambda n: index_files(n, index_url), names)
        return dict(zip(names, pages))


def _rank(f: IndexFile, tags: Sequence[Tag]) -> int | None:
    rank = {t: i for i, t in enumerate(tags)}
    return min((rank[t] for t in f.tags if t in rank), default=None)


def best_file(files: Sequence[IndexFile], version: str, tags: Sequence[Tag]) -> IndexFile | None:
    """The wheel of ``version`` the target prefers (its best tag), else the sdist."""
    want = Version(version)
    mine = [f for f in files if f.version == want]
    ranked = [(r, f.filename, f) for f in mine if f.tags and (r := _rank(f, tags)) is not None]
    if ranked:
        return min(ranked, key=lambda x: (x[0], x[1]))[2]
    return next((f for f in mine if not f.tags), None)


def newest_installable(files: Sequence[IndexFile], python: str, tags: Sequence[Tag]) -> Version | None:
    """The newest final release with a wheel for the target that runs on ``python``, not yanked."""
    ok = {
        f.version
        for f in files
        if not f.yanked and not f.version.is_prerelease and f.tags and f.runs_on(python)
        and _rank(f, tags) is not None
    }  # fmt: skip
    return max(ok) if ok else None
