"""What the prefix lock and the staged build cost on a cold install of 50,000 files.

    python bench/install_staging.py [--repeat 3] [--files 50000] [--json FILE]

A test channel of five noarch packages of 10,000 small files each (tests/support/condapkg.py),
locked as a pixi.lock with file:// URLs. Each round:

- cold: `install()` into a new prefix from an empty cache (unpack, verify, link into the
  staging tree, swap). Inside the same round the pieces the lock and the staging add are timed
  on their own, on the same file system: taking and releasing the prefix lock, looking for
  leftovers beside the prefix (recover), and the rename into place. Target: their sum < 5 %
  of the cold install.
- replace: `install(force=True)` over the env just made (a full staged build, swap, removal of
  the old tree) against py-rattler's bare in-place transaction for the same records onto an
  equal env (which has nothing to change): what stage-and-swap costs over linking in place.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rattler  # noqa: E402

from envcheck.provision import prefix as target  # noqa: E402
from envcheck.provision.install.pipeline import install, read_plan  # noqa: E402
from tests.support.small_channels import many_files, noarch_package, pixi_lock, records  # noqa: E402


def _pieces(prefix: Path) -> float:
    """Seconds for lock + recover + one rename into place, as install does them."""
    t = time.perf_counter()
    with target.hold(target.lock_path(prefix), f"prefix {prefix}", 0, print):
        target.recover(prefix)
        stage = target.staging_path(prefix)
        stage.mkdir()
        old = target.swap_in(stage, prefix)
    took = time.perf_counter() - t
    if old is not None:
        target.remove_tree(old)
    return took


def bare(records_: list, prefix: Path, cache: Path) -> None:
    asyncio.run(
        rattler.install(
            records_,
            target_prefix=prefix,
            package_cache=rattler.PackageCache(cache),
            platform=rattler.Platform("linux-64"),
            execute_link_scripts=False,
            show_progress=False,
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-staging-"))
    try:
        channel = work / "channel"
        per = args.files // 5
        for k in range(5):
            files = {f"share/p{k}/{n}": v for n, v in many_files(per).items()}
            noarch_package(channel, f"many{k}", files)
        lock = pixi_lock(work / "pixi.lock", channel.as_uri(), records(channel))
        plan = read_plan(lock, "linux-64")
        out: dict[str, list[float]] = {"cold": [], "pieces": [], "replace": [], "bare_replace": []}
        for i in range(args.repeat):
            prefix, cache = work / f"p{i}", work / f"c{i}"
            t = time.perf_counter()
            install(plan, prefix, cache)
            out["cold"].append(time.perf_counter() - t)
            out["pieces"].append(_pieces(work / f"q{i}" / "env"))
            t = time.perf_counter()
            install(plan, prefix, cache, force=True)
            out["replace"].append(time.perf_counter() - t)
            twin = work / f"b{i}"
            bare(list(plan.records), twin, work / "bare-cache")
            t = time.perf_counter()
            bare(list(plan.records), twin, work / "bare-cache")
            out["bare_replace"].append(time.perf_counter() - t)
            for p in (prefix, twin, cache):
                shutil.rmtree(p, ignore_errors=True)
        cold, pieces = statistics.median(out["cold"]), statistics.median(out["pieces"])
        print(f"{args.files} files in 5 packages, {args.repeat} rounds")
        print(
            f"cold install {cold:.2f} s; prefix lock + recover + rename {pieces * 1000:.1f} ms"
            f" = {pieces / cold * 100:.3f} % (target < 5 %)"
        )
        rep, brep = statistics.median(out["replace"]), statistics.median(out["bare_replace"])
        print(
            f"--force over an existing env: staged rebuild + swap + removal {rep:.2f} s; "
            f"bare in-place transaction (nothing to change) {brep:.2f} s"
        )
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # py-rattler has crashed in interpreter shutdown after an install
