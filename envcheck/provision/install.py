"""Create an environment from a lock: fetch and check everything, link a new env beside the
prefix, rename it into place.

Order, so that a prefix is either the old env or the complete new one, never a mix:
1. read the lock; check that the prefix's parent can be written;
2. take the prefix lock (``<parent>/.<name>.envcheck-lock``: one install per prefix), undo
   what a dead install left beside it (staging.recover); stop if the stamp (stamp.py) matches
   the lock;
3. fetch every conda package and pip wheel into the cache and check its sha256/md5;
4. under the cache lock: unpack each checked archive (linker child) or check the unpacked
   tree against its marker (unpacked.py); check each package's metadata (validate.py);
5. link the lock's records into ``<parent>/.<name>.envcheck-staging-<pid>`` for the final
   path (linker child: py-rattler may abort), install the pip wheels (pip_part.py), write the
   stamp;
6. commit (signals are held from here), swap the staging tree into place, remove the old env,
   renew the cache markers.
Any failure or signal before step 6 removes the staging tree: the prefix is as it was.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from envcheck import interrupts
from envcheck.errors import BadInput, EnvcheckError
from envcheck.provision import linker, pip_part, prefix_lock, staging, stamp, unpacked, validate
from envcheck.provision.fetch import DEADLINE_S as FETCH_DEADLINE_S
from envcheck.provision.fetch import DiskFull, Fetched, fetch_all
from envcheck.provision.plan import Plan
from envcheck.record import frozen
from envcheck.text import say as terminal_say

LOCK_TIMEOUT_S = 600.0  # how long an install waits for another one into the same prefix


@frozen
class Outcome:
    prefix: Path
    plan: Plan
    noop: bool
    conda: int = 0
    pip: int = 0
    bytes_fetched: int = 0  # downloaded now
    bytes_total: int = 0  # every checked archive, cached or not
    seconds: float = 0.0


def check_writable(prefix: Path) -> None:
    """BadInput when ``prefix`` cannot be built beside and renamed into place: its parent (or
    the nearest ancestor that exists) must be a writable directory; an existing prefix must be
    a conda env (or empty) and not a mount point."""
    p = prefix.parent
    while not p.exists():
        if p.is_symlink():  # a dangling link
            raise BadInput(f"cannot create prefix {prefix}: {p} is a broken symlink")
        p = p.parent
    if not p.is_dir():
        raise BadInput(f"cannot create prefix {prefix}: {p} is not a directory")
    if os.path.lexists(prefix):
        if not prefix.is_dir():
            raise BadInput(f"prefix {prefix} exists and is not a directory")
        if any(prefix.iterdir()) and not (prefix / "conda-meta").is_dir():
            raise BadInput(f"prefix {prefix} exists and is not a conda environment (no conda-meta)")
        staging.check_swappable(prefix)
    if not os.access(p, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write prefix {prefix}: {p} is not writable")
    try:  # root passes os.access everywhere; a read-only filesystem still refuses
        probe = p / f".envcheck-probe-{os.getpid()}-{time.monotonic_ns()}"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"cannot write prefix {prefix}: {e.strerror} ({p})") from None


def _say(line: str) -> None:
    terminal_say(line, prefix="")


def _target(prefix: Path) -> Path:
    """The prefix as an absolute path; a symlink to an env stands for the env it names."""
    prefix = prefix.absolute()
    return Path(os.path.realpath(prefix)) if prefix.is_symlink() else prefix


def install(
    plan: Plan,
    prefix: Path,
    cache: Path,
    *,
    force: bool = False,
    on_fetch: Callable[[int], None] = lambda n: None,
    on_checked: Callable[[], None] = lambda: None,
    reporter=None,  # noqa: ANN001 - an object with on_link_complete(index), or None
    before_link: Callable[[], None] = lambda: None,
    lock_timeout: float = LOCK_TIMEOUT_S,
    fetch_timeout: float = FETCH_DEADLINE_S,
    say: Callable[[str], None] = _say,
) -> Outcome:
    """Steps 1-6 of the module docstring, in order; raises EnvcheckError subclasses."""
    start = time.perf_counter()
    prefix = _target(prefix)
    # relative to the working directory, as any path given; the linker needs file:// URLs
    cache = Path(os.path.abspath(cache))
    check_writable(prefix)
    with prefix_lock.hold(prefix_lock.lock_path(prefix), f"prefix {prefix}", lock_timeout, say):
        for note in staging.recover(prefix):
            say(f"envcheck: {note}")
        if not force and stamp.is_current(prefix, plan):
            return Outcome(prefix, plan, noop=True, seconds=time.perf_counter() - start)
        with linker.Linker(plan, cache) as child:  # forked now, while envcheck has no threads
            fetched = fetch_all(
                [*plan.conda, *plan.pip], cache, on_fetch, deadline=fetch_timeout,
                sizes=_sizes(plan), checked=on_checked,
            )
            conda = [f for f in fetched if f.artifact.manager == "conda"]
            pip = [f for f in fetched if f.artifact.manager == "pip"]
            lock = prefix_lock.cache_lock_path(cache)
            with prefix_lock.hold(lock, f"cache {cache}", lock_timeout, say), _errors(prefix):
                items = [(f.artifact, f.path) for f in conda]
                ready = unpacked.prepare(items, cache, lambda it: _unpack(child, it))  # validated
                before_link()
                _build_and_swap(plan, conda, pip, ready, prefix, child, reporter)
    return Outcome(
        prefix,
        plan,
        noop=False,
        conda=len(plan.conda),
        pip=len(plan.pip),
        bytes_fetched=sum(f.size for f in fetched if not f.cached),
        bytes_total=sum(f.size for f in fetched),
        seconds=time.perf_counter() - start,
    )


def _build_and_swap(
    plan: Plan,
    conda: Sequence[Fetched],
    pip: Sequence[Fetched],
    ready: Sequence[unpacked.Unpacked],
    prefix: Path,
    child: linker.Linker,
    reporter,  # noqa: ANN001
) -> None:
    """Steps 5-6: the records linked, the pip wheels installed and the stamp written into the
    staging tree, then the swap; the staging tree is removed on any failure or signal before
    the swap."""
    stage = staging.staging_path(prefix)
    renewal = unpacked.Renewal(ready)

    def tick(index: int) -> None:
        if 0 <= index < len(plan.conda):  # one conda package per record, in the same order
            renewal.linked(plan.conda[index].url)
        if reporter is not None:
            reporter.on_link_complete(0)

    try:
        child.link(stage, prefix, {f.artifact.url: str(f.path) for f in conda}, tick)
        pip_part.install(plan, pip, stage, prefix)
        stamp.write(stage, plan)
        interrupts.commit()  # from here on the install finishes: signals are held
        old = staging.swap_in(stage, prefix)
    except BaseException:
        child.stop()  # it may still be writing into the staging tree
        staging.remove_tree(stage)
        raise
    if old is not None:
        staging.remove_tree(old)
    renewal.write()


@contextmanager
def _errors(prefix: Path) -> Iterator[None]:
    """OSErrors and py-rattler's errors as one-line EnvcheckErrors (disk full named so)."""
    try:
        yield
    except (EnvcheckError, KeyboardInterrupt, SystemExit):
        raise
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            where = e.filename or prefix
            raise DiskFull(f"disk full writing {where}: {e.strerror}") from None
        raise BadInput(f"cannot write prefix {prefix}: {e}") from None
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EnvcheckError(f"installing into {prefix} failed: {first}", detail=str(e)) from None


def _sizes(plan: Plan) -> dict[str, int]:
    """url -> the size a conda record states (a pixi.lock's ``size``; conda-lock files have
    none): no source is read past it."""
    out = {}
    for r in plan.records:
        size = getattr(r, "size", None)
        if isinstance(size, int) and size > 0:
            out[str(r.url)] = size
    return out


def _unpack(child: linker.Linker, items: list[tuple[str, str, str]]) -> None:
    """The linker child unpacks checked archives into the cache. An archive py-rattler refuses
    to unpack (a member outside its folder, through a symlink of its own) is a bad package,
    exit 4: the folders of this batch are removed, nothing of it stays in the cache."""
    try:
        child.extract(items)
    except linker.JobFailed as e:
        for _archive, folder, _key in items:
            unpacked.forget(Path(folder))
        raise validate.UnsafePackage(f"{e.message} (the package is refused)") from None
