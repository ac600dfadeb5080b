"""Fetch every file a plan names into a staging cache and check its hashes before anything links.

The cache holds archives by their expected sha256 (``archives/<sha256>/<file name>``). A file
already there is hashed again on every install: a cache is not trusted more than a download.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from envcheck.errors import BadInput, Unreachable
from envcheck.lockfile.model import LockedPackage

TRIES = 3  # attempts per URL (network errors and 5xx); 4xx fails at once
BACKOFF_S = 0.5  # first wait between attempts, doubled each time
TIMEOUT_S = 30.0  # per connection attempt and per read
CHUNK = 1 << 20


class HashMismatch(BadInput):
    """A package's bytes are not what the lock says (tampered, truncated or replaced)."""


@dataclass(frozen=True)
class Fetched:
    artifact: LockedPackage
    path: Path  # the checked file in the staging cache
    size: int
    cached: bool  # it was in the cache (and hashed again) rather than downloaded


def _hashes(path: Path) -> tuple[str, str]:
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            sha.update(chunk)
            md5.update(chunk)
    return sha.hexdigest(), md5.hexdigest()


def check(artifact: LockedPackage, sha256: str, md5: str) -> None:
    """HashMismatch naming the package and both hashes when the file is not the locked one."""
    a = artifact
    what = f"{a.manager} package {a.name} {a.version} ({a.file_name})"
    if a.sha256 and sha256 != a.sha256:
        raise HashMismatch(f"{what}: sha256 mismatch: lock says {a.sha256}, file has {sha256}")
    if a.md5 and md5 != a.md5:
        raise HashMismatch(f"{what}: md5 mismatch: lock says {a.md5}, file has {md5}")


def cache_path(cache: Path, artifact: LockedPackage) -> Path:
    key = artifact.sha256 or f"md5-{artifact.md5}"
    return cache / "archives" / key / artifact.file_name


def _open(url: str):  # noqa: ANN202 - a urllib response or a file
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return open(unquote(parsed.path), "rb")  # noqa: SIM115 - closed by the caller
    if parsed.scheme in ("http", "https"):
        return urllib.request.urlopen(url, timeout=TIMEOUT_S)  # noqa: S310
    raise BadInput(f"cannot fetch {url}: only http(s):// and file:// URLs")


class Stopped(Exception):
    """Another fetch failed or the user interrupted: give up between two chunks."""


def _download(
    artifact: LockedPackage, dest: Path, progress: Callable[[int], None], stop: threading.Event
) -> tuple[str, str]:
    """Stream ``artifact.url`` into ``dest`` while hashing it; retry transient failures."""
    last = ""
    for attempt in range(TRIES):
        if attempt and stop.wait(BACKOFF_S * 2 ** (attempt - 1)):
            raise Stopped
        sha, md5, done = hashlib.sha256(), hashlib.md5(), 0
        try:
            with _open(artifact.url) as src, dest.open("wb") as out:
                while chunk := src.read(CHUNK):
                    if stop.is_set():
                        raise Stopped
                    out.write(chunk)
                    sha.update(chunk)
                    md5.update(chunk)
                    done += len(chunk)
                    progress(len(chunk))
            return sha.hexdigest(), md5.hexdigest()
        except FileNotFoundError:
            raise Unreachable(f"cannot fetch {artifact.name}: no file {artifact.url}") from None
        except urllib.error.HTTPError as e:
            progress(-done)
            last = f"HTTP {e.code} {e.reason}"
            if e.code < 500:
                break
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
            progress(-done)
            reason = getattr(e, "reason", None) or e
            last = str(reason)
    raise Unreachable(
        f"cannot fetch {artifact.name} {artifact.version} from {artifact.url}: {last}"
        f" (after {attempt + 1} tr{'y' if attempt == 0 else 'ies'})"
    )


def fetch_one(
    artifact: LockedPackage,
    cache: Path,
    progress: Callable[[int], None],
    stop: threading.Event | None = None,
) -> Fetched:
    """The checked file for ``artifact`` in ``cache``: hashed again if there, else fetched."""
    final = cache_path(cache, artifact)
    if final.is_file():
        sha, md5 = _hashes(final)
        try:
            check(artifact, sha, md5)
            size = final.stat().st_size
            progress(size)
            return Fetched(artifact, final, size, cached=True)
        except HashMismatch:
            final.unlink()  # a damaged cache entry: fetch it again, the source decides
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=final.parent, prefix=".part-")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sha, md5 = _download(artifact, tmp, progress, stop or threading.Event())
        check(artifact, sha, md5)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return Fetched(artifact, final, final.stat().st_size, cached=False)


def fetch_all(
    artifacts: Sequence[LockedPackage],
    cache: Path,
    progress: Callable[[int], None] = lambda n: None,
    workers: int = 4,
) -> list[Fetched]:
    """Fetch and check every artifact (in parallel); the first failure stops the rest."""
    if not artifacts:
        return []
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=min(workers, len(artifacts)))
    try:
        futures = [pool.submit(fetch_one, a, cache, progress, stop) for a in artifacts]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for f in futures:  # in the lock's order: the first failing package is the one reported
            if f in done and f.exception() is not None and not isinstance(f.exception(), Stopped):
                raise f.exception()  # type: ignore[misc]
        return [f.result() for f in futures]
    finally:
        stop.set()  # an error or Ctrl-C: the other downloads stop at their next chunk
        pool.shutdown(wait=True, cancel_futures=True)


def clear_partials(cache: Path) -> None:
    """Remove half-written downloads an interrupted install left in the cache."""
    for part in (cache / "archives").glob("*/.part-*"):
        part.unlink(missing_ok=True)


def prune_empty(cache: Path) -> None:
    for d in (cache / "archives").glob("*"):
        if d.is_dir() and not any(d.iterdir()):
            shutil.rmtree(d, ignore_errors=True)
