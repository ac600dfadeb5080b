"""The Debian bookworm root filesystems the image tests build on, made once with debootstrap.

``builder.tar`` (Python, venv, CA certificates) and ``runtime.tar`` (the same without Python and
apt's caches, as an EL7 runtime lacks them) are kept under ``ENVCHECK_TEST_BASES`` (default
/var/cache/envcheck-tests) per ``BASES_VERSION``. debootstrap downloads from Debian's mirror: it
runs under ``fetch``'s retries. ``.ci/run`` makes them before the tests
(``python -m tests.support.base_images``), so a mirror's failure is said there, once.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from pathlib import Path

from tests.support.fetch import FetchFailed, fetch

BASES_VERSION = "bookworm-minbase-2"  # bump when the recipe below changes


def base_tars() -> tuple[Path, Path]:
    """(builder.tar, runtime.tar), made now if this machine has none of this version."""
    cache = Path(os.environ.get("ENVCHECK_TEST_BASES", "/var/cache/envcheck-tests"))
    return _rootfs_tars(cache / BASES_VERSION)


# the runtime base: what an EL7 image lacks anyway (Python, docs, apt's caches)
RUNTIME_EXCLUDE = (
    "usr/lib/python3",
    "usr/bin/python3",
    "usr/share/doc/",
    "usr/share/man/",
    "usr/share/locale/",
    "usr/share/info/",
    "var/cache/apt/",
    "var/lib/apt/lists/",
)


def _rootfs_tars(dest: Path) -> tuple[Path, Path]:
    """builder.tar and runtime.tar (made once with debootstrap; kept in ``dest``)."""
    builder, runtime = dest / "builder.tar", dest / "runtime.tar"
    if builder.is_file() and runtime.is_file():
        return builder, runtime
    dest.mkdir(parents=True, exist_ok=True)
    rootfs = dest / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    fetch(["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
           "bookworm", str(rootfs)], "debootstrap of the bookworm base", timeout=900)
    # this machine reaches PyPI through a proxy with its own CA: the builder trusts what it does
    shutil.copy2("/etc/ssl/certs/ca-certificates.crt", rootfs / "etc/ssl/certs/ca-certificates.crt")

    def keep(info: tarfile.TarInfo, runtime_only: bool) -> tarfile.TarInfo | None:
        name = info.name.removeprefix("./")
        if name.startswith(
            (
                "proc/",
                "sys/",
                "dev/",
                "var/cache/apt/",
                "var/lib/apt/lists/",
                "usr/share/doc/",
                "usr/share/man/",
                "usr/share/locale/",
            )
        ):
            return None
        if runtime_only and name.startswith(RUNTIME_EXCLUDE):
            return None
        return info

    for path, runtime_only in ((builder, False), (runtime, True)):
        with tarfile.open(path.with_suffix(".part"), "w") as tar:
            tar.add(rootfs, arcname=".", filter=lambda i, r=runtime_only: keep(i, r))
        path.with_suffix(".part").rename(path)
    shutil.rmtree(rootfs)
    return builder, runtime


if __name__ == "__main__":
    try:
        print(*base_tars())
    except FetchFailed as e:
        sys.exit(f"base images: {e}")
