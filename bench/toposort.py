"""Benchmark the explicit lock's package order on a chain-shaped lock.

    python bench/toposort.py [--packages 10000] [--repeat 3]

A Lockfile of N conda packages where package i depends on package i-1 (one level per
package: the worst case for conda's level-by-level toposort, which rescans what remains after
each level). Times, in this process, conda-lock's own ``Lockfile._toposort`` (the baseline,
what ``explicit_text`` and ``parse_lockfile`` called before) against envcheck's
``toposorted``, checks that both give the same order, then times ``explicit_text`` as a whole
(which now uses ``toposorted``). Prints medians and the ratio baseline / envcheck.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/ itself must not be on the path: bench/build.py would shadow the `build` package
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

from bench.timing import median_seconds  # noqa: E402
from envcheck.lockfile.condalock import conda_lock_ready  # noqa: E402
from envcheck.lockfile.toposort import toposorted  # noqa: E402
from envcheck.lockfile.write import explicit_text  # noqa: E402


def chain_lockfile(n: int):  # noqa: ANN201 - conda-lock's Lockfile
    conda_lock_ready()
    from conda_lock.lockfile.v2prelim.models import HashModel, LockedDependency, Lockfile, LockMeta

    package = [
        LockedDependency(
            name=f"pkg{i:06d}",
            version="1.0",
            manager="conda",
            platform="linux-64",
            dependencies={f"pkg{i - 1:06d}": ">=1.0"} if i else {},
            url=f"https://conda.anaconda.org/conda-forge/linux-64/pkg{i:06d}-1.0-0.conda",
            hash=HashModel(md5="0" * 32, sha256="0" * 64),
            build="0",
            categories={"main"},
        )
        for i in reversed(range(n))  # written newest first: the sort has work to do
    ]
    meta = LockMeta(
        content_hash={"linux-64": "x"}, channels=[], platforms=["linux-64"], sources=["r.yaml"]
    )
    return Lockfile(package=package, metadata=meta)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packages", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from conda_lock.lockfile.v2prelim.models import Lockfile

    lf = chain_lockfile(a.packages)
    base = Lockfile._toposort(lf.package)
    mine = toposorted(lf.package)
    assert [d.name for d in base] == [d.name for d in mine], "orders differ"
    t_base = median_seconds(lambda: Lockfile._toposort(lf.package), a.repeat)
    t_mine = median_seconds(lambda: toposorted(lf.package), a.repeat)
    t_text = median_seconds(lambda: explicit_text(lf.model_copy(deep=True), "linux-64"), a.repeat)
    print(f"chain of {a.packages:,} conda packages, medians of {a.repeat}")
    print(f"  conda-lock Lockfile._toposort (baseline): {t_base:8.3f} s")
    print(f"  envcheck toposorted:                      {t_mine:8.3f} s")
    print(f"  ratio baseline / envcheck:                {t_base / t_mine:8.1f}x")
    print(f"  explicit_text now (deep copy included):   {t_text:8.3f} s")
    print(
        f"  explicit_text before (estimated: now - envcheck sort + baseline sort): "
        f"{t_text - t_mine + t_base:.3f} s"
    )


if __name__ == "__main__":
    main()
