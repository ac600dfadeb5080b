"""Fetch every file a plan names into a staging cache and check its hashes before anything links.

The cache holds archives by their expected sha256 (``archives/<sha256>/<file name>``). A file
already there is hashed again unless its marker (``.<file name>.verified``: device, inode,
size, mtime and ctime when it was last hashed, with the hashes) still matches its stat data:
any write to the file changes its ctime, and only the kernel sets ctime.

Each download has one deadline (``deadline`` seconds for all its tries together); a watchdog
thread cuts the socket of a download past its deadline or when the install stops (an error
elsewhere, Ctrl-C), so a server that drips one byte a second cannot hold the install and an
interrupt takes effect within a fraction of a second. A download shorter than announced is
retried like a network error; a full disk is reported as such at once.

A ``file://`` source is read only when it is a regular file: it is opened without blocking
(a FIFO with no writer returns at once) and refused after fstat when it is a FIFO, a device, a
directory or a socket (one BadInput line, exit 4); it is read under the same deadline. A
mismatch of a file:// source names the lock's hash and says the file does not match: the
hash of a local file the lock names (/etc/shadow, as root) is never printed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from envcheck.errors import BadInput, Unreachable
from envcheck.inputs import kind
from envcheck.lockfile.model import LockedPackage
from envcheck.provision.cache_layout import archive_path
from envcheck.record import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

TRIES = 3  # attempts per URL (network errors, 5xx, short reads); 4xx fails at once
BACKOFF_S = 0.5  # first wait between attempts, doubled each time
TIMEOUT_S = 30.0  # per connection attempt and per silent read
DEADLINE_S = 900.0  # all attempts at one file together (--fetch-timeout)
WATCH_S = 0.1  # how often the watchdog looks at the downloads in flight
CHUNK = 1 << 20


class DiskFull(BadInput):
    """No space left (or quota exceeded) where the env or the cache is written."""


class HashMismatch(BadInput):
    """A package's bytes are not what the lock says (tampered, truncated or replaced)."""


@frozen
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


def check(artifact: LockedPackage, sha256: str, md5: str, *, reveal: bool = True) -> None:
    """HashMismatch naming the package and the lock's hash when the file is not the locked
    one; the file's own hash too when ``reveal`` (not for a file:// source: an oracle)."""
    a = artifact
    what = f"{a.manager} package {a.name} {a.version} ({a.file_name})"
    for name, locked, got in (("sha256", a.sha256, sha256), ("md5", a.md5, md5)):
        if locked and got != locked:
            has = f"file has {got}" if reveal else "the file does not match"
            raise HashMismatch(f"{what}: {name} mismatch: lock says {locked}, {has}")


def is_local(url: str) -> bool:
    """A file:// URL: its bytes are a file on this machine, not an answer from a server."""
    return urlparse(url).scheme == "file"


def cache_path(cache: Path, artifact: LockedPackage) -> Path:
    return archive_path(cache, artifact.sha256, artifact.md5, artifact.file_name)


class _LocalFile:
    """A file:// source: a regular file, read under its download's deadline."""

    def __init__(self, url: str, path: str, watch: _Watch) -> None:
        # O_NONBLOCK: a FIFO without a writer opens at once, to be refused below
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(self.fd)
            if not stat.S_ISREG(st.st_mode):
                raise BadInput(f"cannot fetch {url}: it is {kind(st.st_mode)}, not a regular file")
            if watch.limit is not None and st.st_size > watch.limit:
                raise TooLarge(f"cannot fetch {url}: it is {st.st_size} bytes, more than the "
                               f"{watch.limit} the lock states (not read)")
            os.set_blocking(self.fd, True)
        except BaseException:
            os.close(self.fd)
            raise
        self.watch = watch

    def read(self, n: int) -> bytes:
        if self.watch.cut or self.watch.left() <= 0:
            raise OSError("cut")  # past --fetch-timeout (a file on a hung network mount)
        return os.read(self.fd, n)

    def __enter__(self) -> _LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def _open(url: str, timeout: float, watch: _Watch):  # noqa: ANN202 - a urllib response or a file
    from envcheck.mirrors import mirrored, mirrors

    url = mirrored(url, mirrors())  # ENVCHECK_CHANNEL_MIRRORS: the hashes are the lock's
    parsed = urlparse(url)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise BadInput(f"cannot fetch {url}: a file:// URL names a file on this machine")
        return _LocalFile(url, unquote(parsed.path), watch)
    if parsed.scheme in ("http", "https"):
        import urllib.request  # loaded by _fetch_threads already: nothing to fetch, no import

        return urllib.request.urlopen(url, timeout=timeout)  # noqa: S310
    raise BadInput(f"cannot fetch {url}: only http(s):// and file:// URLs")


class Stopped(Exception):
    """Another fetch failed or the user interrupted: give up now."""


class _Short(Exception):
    """The server closed the connection before sending what it announced."""


class TooLarge(BadInput):
    """A source larger than the size the lock states: refused, never read to its end."""


class _Watch:
    """One download's deadline and socket, which the watchdog cuts when it is time, and the
    size the lock states for it (None: the lock does not say)."""

    def __init__(self, seconds: float, limit: int | None = None) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds
        self.limit = limit
        self.sock: socket.socket | None = None
        self.cut = False

    def left(self) -> float:
        return self.end - time.monotonic()

    def attach(self, src) -> None:  # noqa: ANN001
        raw = getattr(getattr(src, "fp", None), "raw", None)
        self.sock = getattr(raw, "_sock", None)  # http.client's socket (None for a file)

    def cut_now(self) -> None:
        self.cut = True
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                import socket

                sock.shutdown(socket.SHUT_RDWR)  # the blocked read returns at once


def _watchdog(watches: list[_Watch], stop: threading.Event, done: threading.Event) -> None:
    while not done.wait(WATCH_S):
        for w in list(watches):
            if not w.cut and (stop.is_set() or w.left() <= 0):
                w.cut_now()


def _stream(  # noqa: ANN001
    src, out, sha, md5, progress: Callable[[int], None], limit: int | None = None
) -> int:
    done = 0
    read = getattr(src, "read1", src.read)  # read1: what has arrived, not a full chunk
    while chunk := read(CHUNK):
        if limit is not None and done + len(chunk) > limit:
            raise TooLarge(f"{getattr(src, 'url', None) or out.name}: more than the {limit} "
                           "bytes the lock states (the rest is not read)")
        try:
            out.write(chunk)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(f"disk full writing the cache: {e.strerror} ({out.name})") from None
            raise
        sha.update(chunk)
        md5.update(chunk)
        done += len(chunk)
        progress(len(chunk))
    if getattr(src, "length", None):  # http.client counts down what the server announced
        raise _Short(f"connection closed {src.length} bytes short of the announced length")
    return done


def _download(
    artifact: LockedPackage,
    dest: Path,
    progress: Callable[[int], None],
    stop: threading.Event,
    watch: _Watch,
) -> tuple[str, str]:
    """Stream ``artifact.url`` into ``dest`` while hashing it; retry transient failures."""
    import urllib.error

    from envcheck.network import root_cause

    last = ""
    for attempt in range(TRIES):
        if attempt and stop.wait(min(BACKOFF_S * 2 ** (attempt - 1), max(watch.left(), 0))):
            raise Stopped
        if stop.is_set():
            raise Stopped
        if watch.left() <= 0:
            break
        sha, md5, done = hashlib.sha256(), hashlib.md5(), 0
        try:
            with _open(artifact.url, min(TIMEOUT_S, watch.left()), watch) as src, \
                    dest.open("wb") as out:
                watch.attach(src)
                done = _stream(src, out, sha, md5, progress, watch.limit)
            if watch.cut:
                raise OSError("cut")
            got = (sha.hexdigest(), md5.hexdigest())
            if _matches(artifact, got) or attempt == TRIES - 1:
                return got
            last = f"{done} bytes that do not match the lock"  # a truncated or bad answer
            progress(-done)
        except FileNotFoundError:
            raise Unreachable(f"cannot fetch {artifact.name}: no file {artifact.url}") from None
        except urllib.error.HTTPError as e:
            progress(-done)
            last = f"HTTP {e.code} {e.reason}"
            if e.code < 500:
                break
        except (
            urllib.error.URLError,
            TimeoutError,
            ConnectionError,
            OSError,
            _Short,
            ValueError,
        ) as e:
            progress(-done)
            if stop.is_set():
                raise Stopped from None
            if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(f"disk full writing the cache: {e.strerror} ({dest})") from None
            last = root_cause(str(getattr(e, "reason", None) or e))
        finally:
            watch.sock = None
        if watch.left() <= 0 or watch.cut and not stop.is_set():
            last = f"no complete answer within --fetch-timeout {watch.seconds:g} s ({last})"
            break
    raise Unreachable(
        f"cannot fetch {artifact.name} {artifact.version} from {artifact.url}: {last}"
        f" (after {attempt + 1} tr{'y' if attempt == 0 else 'ies'})"
    )


def _matches(artifact: LockedPackage, got: tuple[str, str]) -> bool:
    return (not artifact.sha256 or got[0] == artifact.sha256) and (
        not artifact.md5 or got[1] == artifact.md5
    )


def _marker(final: Path) -> Path:
    return final.with_name(f".{final.name}.verified")


def _stat_key(path: Path) -> str:
    st = path.stat()
    return f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"


def _still_verified(final: Path, artifact: LockedPackage) -> bool:
    try:
        key, sha, md5 = _marker(final).read_text().rsplit(" ", 2)
        return key == _stat_key(final) and _matches(artifact, (sha, md5.strip()))
    except (OSError, ValueError):
        return False


def _mark(final: Path, sha: str, md5: str) -> None:
    try:
        tmp = final.with_name(f".{final.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(f"{_stat_key(final)} {sha} {md5}\n")
        os.replace(tmp, _marker(final))
    except OSError:
        pass  # no marker: the next install hashes the file again


def _known(artifact: LockedPackage, cache: Path, progress: Callable[[int], None]) -> Fetched | None:
    """The cached file when its marker still matches its stat data (no hashing, no thread)."""
    final = cache_path(cache, artifact)
    try:
        st = final.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or not _still_verified(final, artifact):
        return None
    progress(st.st_size)
    return Fetched(artifact, final, st.st_size, cached=True)


def fetch_one(
    artifact: LockedPackage,
    cache: Path,
    progress: Callable[[int], None],
    stop: threading.Event | None = None,
    watch: _Watch | None = None,
) -> Fetched:
    """The checked file for ``artifact`` in ``cache``: hashed again if there (fetch_all has
    found its marker stale or missing), else fetched."""
    final = cache_path(cache, artifact)
    if final.is_file():
        size = final.stat().st_size
        sha, md5 = _hashes(final)
        try:
            check(artifact, sha, md5)
            _mark(final, sha, md5)
            progress(size)
            return Fetched(artifact, final, size, cached=True)
        except HashMismatch:
            final.unlink()  # a damaged cache entry: fetch it again, the source decides
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        import tempfile

        fd, tmp_name = tempfile.mkstemp(dir=final.parent, prefix=".part-")
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFull(f"disk full writing the cache: {e.strerror} ({final.parent})") from None
        raise BadInput(f"cannot write the cache: {e.strerror} ({final.parent})") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sha, md5 = _download(
            artifact, tmp, progress, stop or threading.Event(), watch or _Watch(DEADLINE_S)
        )
        check(artifact, sha, md5, reveal=not is_local(artifact.url))
        os.replace(tmp, final)
        _mark(final, sha, md5)
    finally:
        tmp.unlink(missing_ok=True)
    return Fetched(artifact, final, final.stat().st_size, cached=False)


def fetch_all(
    artifacts: Sequence[LockedPackage],
    cache: Path,
    progress: Callable[[int], None] = lambda n: None,
    workers: int = 4,
    deadline: float = DEADLINE_S,
    sizes: Mapping[str, int] | None = None,
    checked: Callable[[], None] = lambda: None,
) -> list[Fetched]:
    """Fetch and check every artifact (in parallel) into ``cache``, which is made if missing;
    the first failure stops the rest, and no half-written download stays behind.
    ``progress`` hears bytes (negative: a retry takes them back), ``checked`` each file whose
    hash matched, from the cache or fetched.

    ``sizes``: url -> the size the lock states; a source is never read past it (TooLarge).
    Workers are daemon threads: an interrupt returns at once, whatever they are blocked in.
    """
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot use cache {cache}: {e.strerror}") from None
    try:
        known = [_known(a, cache, progress) for a in artifacts]
        for _ in filter(None, known):
            checked()
        missing = [a for a, k in zip(artifacts, known) if k is None]
        if not missing:  # all cached and unchanged: no threads to start
            return [k for k in known if k is not None]
        fetched = iter(_fetch_threads(missing, cache, progress, workers, deadline, sizes or {},
                                      checked))
        merged = [k if k is not None else next(fetched, None) for k in known]
        return [f for f in merged if f is not None]
    finally:
        clear_partials(cache)


def _fetch_threads(
    artifacts: Sequence[LockedPackage],
    cache: Path,
    progress: Callable[[int], None],
    workers: int,
    deadline: float,
    sizes: Mapping[str, int],
    checked: Callable[[], None],
) -> list[Fetched]:
    import urllib.request  # noqa: F401 - here, before the threads: a warm install needs none

    stop, finished = threading.Event(), threading.Event()
    results: list[Fetched | BaseException | None] = [None] * len(artifacts)
    watches: list[_Watch] = []
    todo = list(range(len(artifacts)))
    lock = threading.Lock()

    def work() -> None:
        while not stop.is_set():
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
                watch = _Watch(deadline, sizes.get(artifacts[i].url))
                watches.append(watch)
            try:
                results[i] = fetch_one(artifacts[i], cache, progress, stop, watch)
                checked()
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                results[i] = e
                stop.set()
            finally:
                with lock:
                    watches.remove(watch)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(workers, len(todo)))]
    dog = threading.Thread(target=_watchdog, args=(watches, stop, finished), daemon=True)
    try:
        dog.start()
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)  # short waits: a signal's exception is raised between them
    finally:
        stop.set()  # an error or Ctrl-C: the other downloads are cut by the watchdog
        for w in list(watches):
            w.cut_now()
        end = time.monotonic() + 1.0  # cut downloads end at once and remove their .part files
        for t in threads:
            if t.ident is not None:  # a Ctrl-C inside start() leaves the rest never started
                t.join(max(0.0, end - time.monotonic()))
        finished.set()
        if dog.ident is not None and dog.is_alive():
            dog.join(1.0)  # gone before the next install looks at this process's threads
    for r in results:  # in the lock's order: the first failing package is the one reported
        if isinstance(r, BaseException) and not isinstance(r, Stopped):
            raise r
    return [r for r in results if isinstance(r, Fetched)]


def clear_partials(cache: Path) -> None:
    """Remove half-written downloads an interrupted install left in the cache."""
    for part in (cache / "archives").glob("*/.part-*"):
        part.unlink(missing_ok=True)
