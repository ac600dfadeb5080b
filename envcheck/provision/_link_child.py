"""Linker child process: unpacks checked archives or links a lock's records into a staging dir.

Runs apart from envcheck because py-rattler's linker can abort the whole process (a Rust panic
on hostile package metadata ends in SIGABRT): whatever happens here, the parent is still there
to remove what this process wrote. One JSON job per stdin line; "+" on stdout per package
done, then the job's JSON outcome line. It ends at EOF on stdin, and when the parent dies
(even by SIGKILL).

    {"op": "extract", "items": [[archive, dest, sha256 or md5], ...]}
    {"op": "link", "lock": ..., "lock_sha256": ..., "platform": ..., "staging": ..., "final": ...,
     "pkgs": ..., "archives": {url: path}}
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

ENOSPC_TEXT = ("No space left on device", "os error 28", "Disk quota exceeded", "os error 122")


def _die_with_parent() -> None:
    parent = os.environ.get("ENVCHECK_LINK_PARENT")
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent and os.getppid() != int(parent):  # it died before prctl took effect
        os._exit(1)


def _tick() -> None:
    sys.stdout.write("+\n")
    sys.stdout.flush()


class _Reporter:
    """py-rattler's installer callbacks: one tick per package linked, every other a no-op."""

    def on_link_complete(self, index: int) -> None:
        _tick()

    def __getattr__(self, name: str):  # noqa: ANN204
        if name.startswith("on_"):
            return lambda *a, **k: 0
        raise AttributeError(name)


def _extract(job: dict[str, Any]) -> None:
    from rattler.package_streaming import extract

    for archive, dest, key in job["items"]:  # key: the locked sha256, else md5
        dest_path = Path(dest)
        shutil.rmtree(dest_path, ignore_errors=True)
        Path(f"{dest}.lock").unlink(missing_ok=True)  # py-rattler's entry for the old tree
        sha, md5 = (h.hex() for h in extract(archive, dest_path))
        got = sha if len(key) == 64 else md5
        if got != key:  # the archive changed after it was checked
            raise RuntimeError(f"{archive}: the unpacked bytes hash to {got}, not {key}")
        _tick()


def _link(job: dict[str, Any]) -> None:
    import rattler
    from rattler import PackageCache, ValidationMode

    from envcheck.provision.plan import read_plan

    plan = read_plan(Path(job["lock"]), job["platform"])
    if plan.lock_sha256 != job["lock_sha256"]:
        raise RuntimeError(f"{job['lock']} changed during the install")
    archives = job["archives"]
    records = [
        rattler.RepoDataRecord(r, r.file_name, Path(archives[r.url]).as_uri(), r.channel)
        for r in plan.records
    ]
    asyncio.run(
        rattler.install(
            records,
            target_prefix=job["staging"],
            # envcheck checked every unpacked package (unpacked.py): py-rattler need not
            package_cache=PackageCache.new_layered([job["pkgs"]], False, ValidationMode.skip()),
            platform=rattler.Platform(plan.platform),
            execute_link_scripts=False,
            show_progress=False,
            reporter=_Reporter(),
            alternative_target_prefix=job["final"],
        )
    )
    _restore_urls(Path(job["staging"]), plan.records)


def _restore_urls(prefix: Path, records: Any) -> None:
    """conda-meta records name the lock's URL, not the staging cache rattler read from."""
    meta = prefix / "conda-meta"
    for r in records:
        stem = r.file_name.removesuffix(".conda").removesuffix(".tar.bz2")
        path = meta / f"{stem}.json"
        data = json.loads(path.read_text())
        data["url"] = r.url
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(tmp, path)


def main() -> None:
    _die_with_parent()
    # imported before the first job arrives: the parent starts this process early, so the
    # imports overlap with its downloads and checks
    import rattler  # noqa: F401
    import rattler.package_streaming  # noqa: F401

    import envcheck.provision.plan  # noqa: F401

    for line in sys.stdin:
        job = json.loads(line)
        try:
            (_extract if job["op"] == "extract" else _link)(job)
            outcome: dict[str, Any] = {"ok": True}
        except BaseException as e:  # noqa: BLE001 - everything is reported to the parent
            text = str(e).strip() or type(e).__name__
            outcome = {"ok": False, "error": text, "enospc": any(t in text for t in ENOSPC_TEXT)}
        sys.stdout.write(json.dumps(outcome) + "\n")
        sys.stdout.flush()
    os._exit(0)  # no interpreter shutdown: py-rattler has crashed in it


if __name__ == "__main__":
    main()
