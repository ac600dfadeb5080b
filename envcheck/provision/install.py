"""Create an environment from a lock: fetch and check everything, link a new env beside the
prefix, rename it into place.

Order, so that a prefix is either the old env or the complete new one, never a mix:
1. read the lock; check that the prefix's parent can be written;
2. take the prefix lock (``<parent>/.<name>.envcheck-lock``: one install per prefix), undo
   what a dead install left beside it (staging.recover); stop if the stamp matches the lock;
3. fetch every conda package and pip wheel into the cache and check its sha256/md5;
4. under the cache lock: unpack each checked archive (linker child) or check the unpacked
   tree against its marker (unpacked.py); check each package's metadata (validate.py);
5. link the lock's records into ``<parent>/.<name>.envcheck-staging-<pid>`` for the final
   path (linker child: py-rattler may abort), install the pip wheels (pip_part.py), write the
   stamp (``conda-meta/envcheck-install.json``);
6. commit (signals are held from here), swap the staging tree into place, remove the old env,
   renew the cache markers.
Any failure or signal before step 6 removes the staging tree: the prefix is as it was.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from envcheck import __version__, interrupts
from envcheck.errors import BadInput, EnvcheckError
from envcheck.provision import linker, pip_part, prefix_lock, staging, unpacked, validate
from envcheck.provision.fetch import DEADLINE_S as FETCH_DEADLINE_S
from envcheck.provision.fetch import DiskFull, Fetched, clear_partials, fetch_all
from envcheck.provision.plan import Plan
from envcheck.record import frozen

LOCK_TIMEOUT_S = 600.0  # how long an install waits for another one into the same prefix
STAMP = "envcheck-install.json"  # under <prefix>/conda-meta/


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


def read_stamp(prefix: Path) -> dict | None:
    try:
        return json.loads((prefix / "conda-meta" / STAMP).read_text())
    except (OSError, ValueError):
        return None


def is_current(prefix: Path, plan: Plan) -> bool:
    stamp = read_stamp(prefix)
    return bool(
        stamp
        and stamp.get("lock_sha256") == plan.lock_sha256
        and stamp.get("platform") == plan.platform
    )


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
        fd, probe = tempfile.mkstemp(dir=p, prefix=".envcheck-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"cannot write prefix {prefix}: {e.strerror} ({p})") from None


def write_stamp(prefix: Path, plan: Plan) -> None:
    body = {
        "lock": str(plan.lock.resolve()),
        "lock_sha256": plan.lock_sha256,
        "platform": plan.platform,
        "conda_packages": len(plan.conda),
        "pip_packages": len(plan.pip),
        "envcheck": __version__,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = prefix / "conda-meta" / STAMP
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


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
    """Steps 1-6 of the module docstring; raises EnvcheckError subclasses."""
    start = time.perf_counter()
    prefix = _target(prefix)
    check_writable(prefix)
    with prefix_lock.hold(prefix_lock.lock_path(prefix), f"prefix {prefix}", lock_timeout, say):
        for note in staging.recover(prefix):
            say(f"envcheck: {note}")
        if not force and is_current(prefix, plan):
            return Outcome(prefix, plan, noop=True, seconds=time.perf_counter() - start)
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BadInput(f"cannot use cache {cache}: {e.strerror}") from None
        with linker.Linker(plan, cache) as child:  # forked now, while envcheck has no threads
            try:
                fetched = fetch_all(
                    [*plan.conda, *plan.pip], cache, on_fetch, deadline=fetch_timeout,
                    checked=on_checked,
                )
            finally:
                clear_partials(cache)
            lock = prefix_lock.cache_lock_path(cache)
            with prefix_lock.hold(lock, f"cache {cache}", lock_timeout, say):
                _build(plan, fetched, prefix, cache, child, reporter, before_link)
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


def _build(
    plan: Plan,
    fetched: Sequence[Fetched],
    prefix: Path,
    cache: Path,
    child: linker.Linker,
    reporter,  # noqa: ANN001
    before_link: Callable[[], None],
) -> None:
    """Steps 4-6: verified unpacked packages, a staged env, the swap."""
    conda = [f for f in fetched if f.artifact.manager == "conda"]
    with _errors(prefix):
        ready = unpacked.prepare(
            [(f.artifact, f.path) for f in conda],
            cache,
            lambda items: child.run({"op": "extract", "items": items}, f"unpacking into {cache}"),
        )
        for u in ready:
            if u.validated:  # validated before, not changed since (the stat marker)
                continue
            try:
                validate.check_package(f"{u.artifact.name} {u.artifact.version}", u.folder, u.walk)
            except validate.UnsafePackage:
                unpacked.forget(u.folder)  # nothing of a refused package stays in the cache
                raise
    before_link()
    stage = staging.staging_path(prefix)
    job = {
        "op": "link",
        "staging": str(stage),
        "final": str(prefix),
        "pkgs": str(cache / "pkgs"),
        "archives": {f.artifact.url: str(f.path) for f in conda},
    }
    renewal = unpacked.Renewal(ready)

    def tick(index: int) -> None:
        if 0 <= index < len(plan.conda):  # one conda package per record, in the same order
            renewal.linked(plan.conda[index].url)
        if reporter is not None:
            reporter.on_link_complete(0)

    try:
        with _errors(prefix):
            child.run(job, f"linking into {prefix}", tick)
            child.finish()  # the last job: it exits while the install goes on
            pip_part.install(
                plan, [f for f in fetched if f.artifact.manager == "pip"], stage, prefix
            )
            write_stamp(stage, plan)
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
