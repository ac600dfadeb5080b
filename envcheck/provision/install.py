"""Create an environment from a lock: fetch and check everything, then link with py-rattler.

Order, so that a failure leaves nothing that looks complete:
1. read the lock (records, pip wheels, hashes); stop if the prefix's stamp already matches it;
2. check that the prefix can be written;
3. fetch every conda package and pip wheel into the staging cache and check its sha256/md5
   (cache hits are hashed again); nothing in the prefix has been touched yet;
4. drop the old stamp, link the conda packages (py-rattler, from the checked files), install
   the pip wheels with the prefix's interpreter (uv, hashes required, no index, no deps);
5. write the stamp (``conda-meta/envcheck-install.json``) last.
A prefix that did not exist before is removed again when step 4 fails or is interrupted.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from envcheck import __version__
from envcheck.errors import BadInput, EnvcheckError
from envcheck.provision.fetch import Fetched, clear_partials, fetch_all
from envcheck.provision.plan import Plan

STAMP = "envcheck-install.json"  # under <prefix>/conda-meta/


@dataclass(frozen=True)
class Outcome:
    prefix: Path
    plan: Plan
    noop: bool
    conda: int = 0
    pip: int = 0
    bytes_fetched: int = 0  # downloaded now
    bytes_total: int = 0  # every checked archive, cached or not
    seconds: float = 0.0


def default_cache() -> Path:
    env = os.environ.get("ENVCHECK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck"


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
    """BadInput when ``prefix`` (or, if it does not exist, its nearest ancestor) is not writable."""
    p = prefix
    while not p.exists():
        if p.is_symlink():  # a dangling link
            raise BadInput(f"cannot create prefix {prefix}: {p} is a broken symlink")
        p = p.parent
    if not p.is_dir():
        raise BadInput(f"cannot create prefix {prefix}: {p} is not a directory")
    if p == prefix and any(prefix.iterdir()) and not (prefix / "conda-meta").is_dir():
        raise BadInput(f"prefix {prefix} exists and is not a conda environment (no conda-meta)")
    if not os.access(p, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write prefix {prefix}: {p} is not writable")
    try:  # root passes os.access everywhere; a read-only filesystem still refuses
        fd, probe = tempfile.mkstemp(dir=p, prefix=".envcheck-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"cannot write prefix {prefix}: {e.strerror} ({p})") from None


def _link(plan: Plan, fetched: Sequence[Fetched], prefix: Path, cache: Path, reporter) -> None:  # noqa: ANN001
    """py-rattler's install of the lock's records from the checked files.

    A record py-rattler already holds extracted in its cache is passed as the lock has it
    (py-rattler links the extracted tree, whatever the URL); any other is pointed at its
    checked archive in the staging cache, so py-rattler never downloads anything itself.
    """
    import rattler
    from rattler import PackageCache

    by_url = {f.artifact.url: f for f in fetched}
    package_cache = PackageCache(cache / "pkgs")

    async def work() -> list:
        index = await package_cache.index()
        records, moved = [], []
        for r in plan.records:
            if index.contains_record(r):
                records.append(r)
            else:
                records.append(
                    rattler.RepoDataRecord(r, r.file_name, by_url[r.url].path.as_uri(), r.channel)
                )
                moved.append(r)
        await rattler.install(
            records,
            target_prefix=prefix,
            package_cache=package_cache,
            platform=rattler.Platform(plan.platform),
            execute_link_scripts=False,
            show_progress=False,
            reporter=reporter,
        )
        return moved

    moved = asyncio.run(work())
    _restore_urls(prefix, moved)


def _restore_urls(prefix: Path, records: Sequence) -> None:
    """conda-meta records name the lock's URL, not the staging cache rattler read from."""
    meta = prefix / "conda-meta"
    for r in records:
        stem = r.file_name.removesuffix(".conda").removesuffix(".tar.bz2")
        path = meta / f"{stem}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("url") != r.url:
            data["url"] = r.url
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
            os.replace(tmp, path)


def _pip(plan: Plan, fetched: Sequence[Fetched], prefix: Path) -> None:
    """Install the checked wheels into the prefix's interpreter: hashes required, no index."""
    if not plan.pip:
        return
    from envcheck.resolve.pip import _uv

    python = prefix / "bin" / "python"
    if not python.exists():
        raise EnvcheckError(f"the lock has pip packages but {python} does not exist")
    by_url = {f.artifact.url: f for f in fetched}
    lines = [f"{a.name} @ {by_url[a.url].path.as_uri()} --hash=sha256:{a.sha256}" for a in plan.pip]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("\n".join(lines) + "\n")
    try:
        done = subprocess.run(
            [
                _uv(),
                "pip",
                "install",
                "--python",
                str(python),
                "--no-deps",
                "--no-index",
                "--require-hashes",
                "--offline",
                "--no-cache",
                "--break-system-packages",
                "--quiet",
                "-r",
                req.name,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(req.name)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EnvcheckError(f"pip part failed in {prefix}: {last}", detail=done.stderr)


def _topmost_missing(prefix: Path) -> Path | None:
    """The highest directory of ``prefix``'s path that does not exist yet (None: it exists)."""
    if prefix.exists():
        return None
    p = prefix
    while not p.parent.exists():
        p = p.parent
    return p


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


def install(
    plan: Plan,
    prefix: Path,
    cache: Path,
    *,
    force: bool = False,
    on_fetch: Callable[[int], None] = lambda n: None,
    reporter=None,  # noqa: ANN001 - a rattler InstallerReporter
    before_link: Callable[[], None] = lambda: None,
) -> Outcome:
    """Steps 1-5 of the module docstring; raises EnvcheckError subclasses."""
    start = time.perf_counter()
    prefix = prefix.absolute()
    if not force and is_current(prefix, plan):
        return Outcome(prefix, plan, noop=True, seconds=time.perf_counter() - start)
    check_writable(prefix)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot use cache {cache}: {e.strerror}") from None
    try:
        fetched = fetch_all([*plan.conda, *plan.pip], cache, on_fetch)
    finally:
        clear_partials(cache)
    created = _topmost_missing(prefix)  # what to remove again if linking fails
    before_link()
    try:
        (prefix / "conda-meta" / STAMP).unlink(missing_ok=True)
        _link(plan, [f for f in fetched if f.artifact.manager == "conda"], prefix, cache, reporter)
        _pip(plan, [f for f in fetched if f.artifact.manager == "pip"], prefix)
        write_stamp(prefix, plan)
    except BaseException as e:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        if isinstance(e, (EnvcheckError, KeyboardInterrupt, SystemExit)):
            raise
        if isinstance(e, OSError):
            raise BadInput(f"cannot write prefix {prefix}: {e}") from None
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EnvcheckError(f"linking into {prefix} failed: {first}", detail=str(e)) from None
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
