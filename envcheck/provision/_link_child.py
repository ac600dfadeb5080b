"""The linker child's side: unpack checked archives, link a plan's records into a staging dir.

Runs apart from envcheck (linker.Linker) because py-rattler's linker can abort the whole
process (a Rust panic on hostile package metadata ends in SIGABRT): whatever happens here,
envcheck is still there to remove what this process wrote. Forked with the plan (py-rattler's
records) in hand, or started as ``python -m envcheck.provision._link_child``, which reads the
lock when the plan job names it (``_adopt``): the plan job's sha256 must be that of the bytes
read here, or every later job is refused. It never returns into envcheck's code: it leaves
through ``os._exit``. Before its first job it gets py-rattler ready (``_warm``) while envcheck
checks the cache.

Jobs arrive one JSON line each on ``jobs``; "+" is written to ``out`` per package unpacked,
"+N" per package linked (N its index in the plan's records), then the job's JSON outcome line:

    {"op": "plan", "lock": ..., "platform": ..., "sha256": ..., "cache": ...}  (no plan yet)
    {"op": "extract", "items": [[archive, dest, sha256 or md5], ...]}
    {"op": "link", "staging": ..., "final": ..., "pkgs": ..., "archives": {url: path}}
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
from pathlib import Path

from envcheck.fds import write_all
from envcheck.provision.cache_layout import archive_stem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENOSPC_TEXT = ("No space left on device", "os error 28", "Disk quota exceeded", "os error 122")


class _Out:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def line(self, text: str) -> None:
        write_all(self.fd, (text + "\n").encode())


class _Reporter:
    """py-rattler's installer callbacks: "+N" per package linked (N its index in the plan's
    records, -1 when the name is not known), every other callback a no-op."""

    def __init__(self, out: _Out, records: Any = ()) -> None:
        self.out = out
        self.index = {r.name.normalized: i for i, r in enumerate(records)}

    def on_link_start(self, operation: int, package_name: str) -> int:
        return self.index.get(package_name, -1)

    def on_link_complete(self, index: int) -> None:
        self.out.line(f"+{index}")

    def __getattr__(self, name: str):  # noqa: ANN204
        if name.startswith("on_"):
            return lambda *a, **k: 0
        raise AttributeError(name)


def _extract(job: dict[str, Any], out: _Out) -> None:
    import shutil

    from rattler.package_streaming import extract

    for archive, dest, key in job["items"]:  # key: the locked sha256, else md5
        dest_path = Path(dest)
        shutil.rmtree(dest_path, ignore_errors=True)
        Path(f"{dest}.lock").unlink(missing_ok=True)  # py-rattler's entry for the old tree
        sha, md5 = (h.hex() for h in extract(archive, dest_path))
        got = sha if len(key) == 64 else md5
        if got != key:  # the archive changed after it was checked
            raise RuntimeError(f"{archive}: the unpacked bytes hash to {got}, not {key}")
        out.line("+")


def _records(plan: Any, archives: dict[str, str]) -> list:
    """The plan's records, each naming its checked archive (a file URI) as its URL."""
    import rattler

    return [
        rattler.RepoDataRecord(r, r.file_name, Path(archives[r.url]).as_uri(), r.channel)
        for r in plan.records
    ]


class _Plan:
    """What the child links: one platform's records, in the lock's order (envcheck's Plan
    has these two attributes as well)."""

    def __init__(self, platform: str, records: tuple[Any, ...]) -> None:
        self.platform, self.records = platform, records


def _read_lock(lock: str, platform: str | None) -> tuple[str, _Plan]:
    """(sha256, plan) of ``lock`` for ``platform`` (None: this machine's), read by
    envcheck.lockfile.rattler_read: the bytes hashed are the bytes py-rattler parses."""
    from envcheck.lockfile import rattler_read

    sha256, want, records, _ = rattler_read.read(lock, platform)
    return sha256, _Plan(want, records)


def _archives(plan: Any, cache: str) -> dict[str, str]:
    """URL -> where envcheck's cache keeps the checked archive (cache_layout, as fetch.py)."""
    from envcheck.provision.cache_layout import archive_path

    return {
        r.url: str(archive_path(Path(cache), r.sha256 and r.sha256.hex(), r.md5 and r.md5.hex(),
                                r.file_name))
        for r in plan.records
    }


def _warm(plan: Any, cache: str | None) -> dict[str, Any]:
    """What the link needs that does not depend on envcheck's checks, made while it runs them:
    asyncio and py-rattler imported; with a plan, also ``_ready``'s part. Best effort: the link
    makes whatever is missing."""
    warm: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        import asyncio  # noqa: F401

        import rattler  # noqa: F401

        if plan is not None:
            warm.update(_ready(plan, cache))
    return warm


def _ready(plan: Any, cache: str | None) -> dict[str, Any]:
    """py-rattler's async runtime started (an index of the package cache: it writes nothing),
    an HTTP client (the link reads only the cache: nothing is downloaded) and the records
    naming the archives the cache holds."""
    import asyncio

    import rattler
    from rattler import PackageCache, ValidationMode

    ready: dict[str, Any] = {"client": rattler.Client()}
    if cache is not None:
        layered = PackageCache.new_layered([f"{cache}/pkgs"], False, ValidationMode.skip())
        asyncio.run(layered.index())
        archives = _archives(plan, cache)
        ready["records"] = (archives, _records(plan, archives))
    return ready


def _adopt(job: dict[str, Any], warm: dict[str, Any]) -> Any:
    """A plan for a child started without one: the lock as read here, and only when its
    sha256 is the one envcheck read (``{"op": "plan", "lock", "platform", "sha256",
    "cache"}``)."""
    lock, platform = job["lock"], job["platform"]
    sha256, plan = _read_lock(lock, platform)
    if sha256 != job["sha256"]:
        raise RuntimeError(f"{lock} changed while envcheck read it")
    if "records" not in warm:
        with contextlib.suppress(Exception):  # a warm-up only
            warm.update(_ready(plan, job.get("cache")))
    return plan


def _link(plan: Any, job: dict[str, Any], out: _Out, warm: dict[str, Any]) -> None:
    import asyncio

    import rattler
    from rattler import PackageCache, ValidationMode

    archives = job["archives"]
    made, records = warm.get("records", ({}, []))
    if made != archives:
        records = _records(plan, archives)
    client = {"client": warm["client"]} if "client" in warm else {}
    asyncio.run(
        rattler.install(
            records,
            target_prefix=job["staging"],
            # envcheck checked every unpacked package (unpacked.py): py-rattler need not
            package_cache=PackageCache.new_layered([job["pkgs"]], False, ValidationMode.skip()),
            platform=rattler.Platform(plan.platform),
            execute_link_scripts=False,
            show_progress=False,
            reporter=_Reporter(out, plan.records),
            alternative_target_prefix=job["final"],
            **client,
        )
    )
    _restore_urls(Path(job["staging"]), plan.records, archives)


def _restore_urls(prefix: Path, records: Any, archives: dict[str, str]) -> None:
    """conda-meta records name the lock's URL, not the staging cache rattler read from.

    The one ``"url"`` value rattler wrote (the archive's file URI) is replaced in the text:
    parsing and re-writing every record (python's lists thousands of paths) cost more than the
    link. A record where that value is not found exactly once is parsed and re-written."""
    meta = prefix / "conda-meta"
    for r in records:
        stem = archive_stem(r.file_name)
        source = archives.get(r.url)
        wrote = json.dumps(Path(source).as_uri()) if source else ""
        _rewrite(meta / f"{stem}.json", wrote, r.url)


def _rewrite(path: Path, wrote: str, url: str) -> None:
    """Put ``url`` in the record at ``path`` in place of the value ``wrote``, in place.

    The record is in the staging tree, which nobody sees before the swap (a write cut short
    fails the install and the tree is removed): no temporary file and rename, which on ext4
    flushes the file's data (auto_da_alloc). A record with other
    links (rattler made every one new) is replaced, not written through."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    with os.fdopen(fd, "r+b") as f:
        data = f.read()
        text = data.decode()
        hits = [f'"url": {wrote}', f'"url":{wrote}'] if wrote else []
        hit = next((h for h in hits if text.count(h) == 1), "")
        if hit:
            text = text.replace(hit, f'"url": {json.dumps(url)}', 1)
        else:
            record = json.loads(text)
            record["url"] = url
            text = json.dumps(record, indent=2, sort_keys=True)
        new = text.encode()
        if os.fstat(fd).st_nlink == 1:
            f.seek(0)
            f.write(new)
            f.truncate()
            return
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(new)
    os.replace(tmp, path)


def main() -> None:
    """``python -m envcheck.provision._link_child``: the started (not forked) child; jobs on
    stdin, the plan first (``_adopt``), answers on stdout, stderr as given."""
    serve(None, 0, 1, 2, int(os.environ.get("ENVCHECK_LINK_PARENT", "0")))


def _detach(parent: int, stderr_fd: int) -> None:
    """Its own session (a terminal's Ctrl-C reaches envcheck, which ends this process),
    default signal dispositions, death with the parent, stderr to envcheck's capture file."""
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes  # here, in the child: envcheck's own process never needs it

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)
    if stderr_fd != 2:
        os.dup2(stderr_fd, 2)


def serve(
    plan: Any, jobs_fd: int, out_fd: int, stderr_fd: int, parent: int, cache: str | None = None
) -> None:
    """The child's whole life: jobs until EOF, then ``os._exit``. ``cache``: the install's
    cache directory, for the warm-up (``_warm``) done before the first job is read."""
    gc.disable()  # a short life that ends in os._exit: nothing for the cycle collector to free
    try:
        _detach(parent, stderr_fd)
        out = _Out(out_fd)
        warm = _warm(plan, cache)
        with os.fdopen(jobs_fd, "rb", buffering=0) as jobs:
            refused: dict[str, Any] | None = None  # a refused plan: every later job's answer
            for raw in iter(jobs.readline, b""):
                job = json.loads(raw)
                if refused is not None:
                    out.line(json.dumps(refused))
                    continue
                try:
                    if job["op"] == "plan":
                        plan = _adopt(job, warm)
                    elif job["op"] == "extract":
                        _extract(job, out)
                    else:
                        _link(plan, job, out, warm)
                    outcome: dict[str, Any] = {"ok": True}
                except BaseException as e:  # noqa: BLE001 - everything is reported
                    text = str(e).strip() or type(e).__name__
                    enospc = any(t in text for t in ENOSPC_TEXT)
                    outcome = {"ok": False, "error": text, "enospc": enospc}
                    if job["op"] == "plan":
                        refused = outcome
                out.line(json.dumps(outcome))
    finally:
        os._exit(0)  # never back into envcheck's stack; no interpreter shutdown either


if __name__ == "__main__":
    main()
