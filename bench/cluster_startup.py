"""`envcheck verify cluster ADDRESS --smoke none --quiet` as a whole process, against a bare
`python -c "Client(ADDRESS).get_versions(check=True)"` process, on one running cluster.

A `dask scheduler` and --workers `dask worker` processes (one thread each, no nanny) are
started once from this interpreter's environment, then the two commands run in turn
(A B A B ...); each pair gives a ratio and the median of the ratios is the result (target:
at most 1.15x). Both are cold processes: the import of distributed, the connection, and for
envcheck the facts round (the collector is compiled once per worker, on the first pair, which
warms it as a long-lived cluster is).

    python bench/cluster_startup.py [--workers 8] [--repeat 15] [--python ENV/bin/python]

--python: the environment whose envcheck, Python and dask run (a non-editable `pip install .`
venv, say); by default this interpreter's. This script itself needs the test extra (tests/).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pairs import (  # noqa: E402
    BARE_CLIENT,
    alternate,
    dask_cluster,
    load_average,
    quartiles,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    envcheck = str(Path(args.python).with_name("envcheck"))
    with dask_cluster(args.python, args.workers) as address:
        verify = [envcheck, "verify", "cluster", address, "--smoke", "none", "--quiet"]
        bare = [args.python, "-c", BARE_CLIENT, address]
        before = load_average()
        env, dist, ratios = alternate(verify, bare, args.repeat)
        after = load_average()
    print(f"{args.python}, {args.workers} workers, {args.repeat} alternating pairs, "
          f"load average {before} -> {after}")  # fmt: skip
    print(f"envcheck verify cluster --smoke none --quiet: {statistics.median(env) * 1e3:.0f} ms; "
          f"Client + get_versions(check=True): {statistics.median(dist) * 1e3:.0f} ms; "
          f"ratio {statistics.median(ratios):.2f} (quartiles {quartiles(ratios)})")  # fmt: skip


if __name__ == "__main__":
    main()
