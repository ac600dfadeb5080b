"""A package index's file list (PEP 691 JSON simple API): which file of a version a target
installs, and the newest release that has one. Read in parallel, one page per project."""

from __future__ import annotations

import gzip
import http.client
import json
import ssl
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin, urlsplit

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
ACCEPT = f"{JSON}, text/html;q=0.1"  # PEP 691's JSON, else PEP 503's HTML
PAGE_TIMEOUT_S = 15.0
MAX_PARALLEL = 8  # each thread keeps one connection: more only queue on a slow mirror
_LOCAL = threading.local()
_TLS: list[ssl.SSLContext] = []  # one for every thread's connections, made once
_TLS_LOCK = threading.Lock()


def _tls() -> ssl.SSLContext:
    """The TLS settings http.client makes for a connection given none (the system's CA
    certificates, HTTP/1.1 by ALPN), made once: each reads the CA bundle again, about 45 ms
    of CPU, and the page threads would make eight while uv resolves."""
    with _TLS_LOCK:
        if not _TLS:
            context = ssl.create_default_context()
            context.set_alpn_protocols(["http/1.1"])
            if context.post_handshake_auth is not None:
                context.post_handshake_auth = True
            _TLS.append(context)
        return _TLS[0]


def _get(url: str, timeout: float) -> tuple[str, bytes]:
    """GET over this thread's kept-alive connection (gzip accepted): a new TLS handshake per
    page doubles the time for the 90 pages of a RAPIDS stack."""
    u = urlsplit(url)
    conns = _LOCAL.__dict__.setdefault("conns", {})
    for attempt in (0, 1):
        conn = conns.get((u.scheme, u.netloc))
        if conn is None:
            if u.scheme == "https":
                conn = http.client.HTTPSConnection(u.netloc, timeout=timeout, context=_tls())
            else:
                conn = http.client.HTTPConnection(u.netloc, timeout=timeout)
            conns[(u.scheme, u.netloc)] = conn
        try:
            conn.request("GET", u.path + (f"?{u.query}" if u.query else ""),
                         headers={"Accept": ACCEPT, "Accept-Encoding": "gzip"})
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            del conns[(u.scheme, u.netloc)]
            if attempt:
                raise
            continue  # a kept-alive connection the server closed: once more on a new one
        if r.status != 200:
            raise OSError(f"{url}: HTTP {r.status}")
        if r.getheader("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return r.getheader("Content-Type") or "", body
    raise OSError(url)  # pragma: no cover - the loop returns or raises


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


def index_files(name: str, index_url: str, timeout: float = PAGE_TIMEOUT_S) -> Page | None:
    """Every file the index lists for a project; None when the page cannot be read as JSON."""
    name = canonicalize_name(name)
    url = f"{index_url.rstrip('/')}/{name}/"
    try:
        kind, body = _get(url, timeout)
        if "text/html" in kind:  # a PEP 503 index without the JSON form
            return Page(name, html_entries(body.decode("utf-8", "replace"), url))
        if JSON not in kind:
            return None
        doc = json.loads(body)
    except (OSError, ValueError, http.client.HTTPException):
        return None
    return Page(name, tuple(e for e in doc.get("files", []) if isinstance(e, dict)))


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.found.append(dict(attrs))


def html_entries(text: str, page_url: str) -> tuple[dict[str, object], ...]:
    """A PEP 503 page's links as PEP 691 file entries (the sha256 from the URL fragment)."""
    parser = _Anchors()
    parser.feed(text)
    out = []
    for a in parser.found:
        href = a.get("href") or ""
        url, _, fragment = urljoin(page_url, href).partition("#")
        algo, _, digest = fragment.partition("=")
        out.append({
            "filename": unquote(url.rsplit("/", 1)[-1]),
            "url": url,
            "hashes": {algo: digest} if algo and digest else {},
            "requires-python": a.get("data-requires-python") or "",
            "yanked": "data-yanked" in a,
        })
    return tuple(out)


class Page(Sequence[IndexFile]):
    """A project's files, each parsed when first read: numpy lists 4,000 files and a lock
    needs one of them, so parsing them all would cost more than fetching the page."""

    def __init__(self, name: str, entries: tuple[Mapping[str, object], ...]) -> None:
        self.name, self._entries = name, entries
        self._parsed: list[IndexFile] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, i):  # type: ignore[no-untyped-def,override]
        return self.files()[i]

    def files(self) -> list[IndexFile]:
        if self._parsed is None:
            self._parsed = [f for e in self._entries if (f := _file(e, self.name)) is not None]
        return self._parsed

    def of_version(self, version: str) -> list[IndexFile]:
        """The files of one version; by file-name prefix first (what an index names them)."""
        stem = self.name.replace("-", "_")
        prefixes = (f"{stem}-{version}-", f"{stem}-{version}.", f"{self.name}-{version}.")
        quick = [
            f
            for e in self._entries
            if str(e.get("filename", "")).lower().startswith(prefixes)
            and (f := _file(e, self.name)) is not None
        ]
        want = Version(version)
        return [f for f in quick if f.version == want] or [
            f for f in self.files() if f.version == want
        ]


def first_page(name: str, index_urls: Sequence[str] | str) -> Page | None:
    """The project's page on the first index that lists files for it (uv's first-index
    strategy, the extra indexes before the main one)."""
    urls = [index_urls] if isinstance(index_urls, str) else list(index_urls)
    for url in urls:
        page = index_files(name, url)
        if page is not None and len(page):
            return page
    return None


def index_pages(names: Iterable[str], index_urls: Sequence[str] | str) -> dict[str, Page | None]:
    names = sorted({canonicalize_name(n) for n in names})
    if not names:
        return {}
    with ThreadPoolExecutor(min(MAX_PARALLEL, len(names))) as pool:
        pages = pool.map(lambda n: first_page(n, index_urls), names)
        return dict(zip(names, pages))


def _ranks(tags: Sequence[Tag]) -> Mapping[Tag, int]:
    """Each tag's place in ``tags`` (best first), made once per call: a target has hundreds."""
    return {t: i for i, t in enumerate(tags)}


def _rank(f: IndexFile, rank: Mapping[Tag, int]) -> int | None:
    return min((rank[t] for t in f.tags if t in rank), default=None)


def best_file(files: Sequence[IndexFile], version: str, tags: Sequence[Tag]) -> IndexFile | None:
    """The wheel of ``version`` the target prefers (its best tag), else the sdist."""
    want = Version(version)
    mine = (
        files.of_version(version)
        if isinstance(files, Page)
        else [f for f in files if f.version == want]
    )
    rank = _ranks(tags)
    ranked = [(r, f.filename, f) for f in mine if f.tags and (r := _rank(f, rank)) is not None]
    if ranked:
        return min(ranked, key=lambda x: (x[0], x[1]))[2]
    return next((f for f in mine if not f.tags), None)


def newest_installable(
    files: Sequence[IndexFile], python: str, tags: Sequence[Tag]
) -> Version | None:
    """The newest final release with a wheel for the target that runs on ``python``, not yanked."""
    rank = _ranks(tags)
    ok = {
        f.version
        for f in files
        if not f.yanked and not f.version.is_prerelease and f.tags
        and not rank.keys().isdisjoint(f.tags) and f.runs_on(python)
    }
    return max(ok) if ok else None


class Prefetch:
    """Pages read while uv resolves: each project uv's log shows it reading is fetched at
    once, so the pages a lock needs are in when uv ends. Pages nobody asks for are dropped."""

    def __init__(self, index_urls: Sequence[str]) -> None:
        self.index_urls = list(index_urls)
        self._pool = ThreadPoolExecutor(MAX_PARALLEL)
        self._futures: dict[str, Future[Page | None]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, parse: bool = False) -> None:
        """Fetch a project's page; with ``parse`` its files are read too (the held-back
        check reads every file of a direct entry's page), while uv still resolves."""
        name = canonicalize_name(name)
        with self._lock:
            if name not in self._futures:
                self._futures[name] = self._pool.submit(self._fetch, name, parse)

    def _fetch(self, name: str, parse: bool) -> Page | None:
        page = first_page(name, self.index_urls)
        if parse and page is not None:
            page.files()
        return page

    def pages(self, names: Iterable[str]) -> dict[str, Page | None]:
        names = sorted({canonicalize_name(n) for n in names})
        for n in names:
            self.add(n)
        return {n: self._futures[n].result() for n in names}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
