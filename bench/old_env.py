"""verify cluster from inside a RAPIDS 22.08-era environment against distributed's own check.

A venv of Python 3.9 with dask == distributed == 2022.7.1 and envcheck installed into it
(tests/support/old_envs.py builds it, as the tests do), a scheduler and --workers workers started
from it, and in that same environment, interleaved, --repeat times each:

- process: `envcheck verify cluster ADDRESS --smoke none --quiet` as a whole process, against
  `python -c "Client(ADDRESS).get_versions(check=True)"` as a whole process (import, connect,
  ask, close: what a user waits for);
- warm: in one process with one Client, envcheck's verify() (facts round, skew, node checks,
  pinning; --smoke none) against client.get_versions(check=True).

Prints medians and the ratios envcheck / get_versions. Old-environment support must cost
nothing in speed: the ratios should match those of today's stack (BENCHMARKS.md, "verify
cluster").

    python bench/old_env.py [--workers 2] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pairs import BARE_CLIENT, alternate, dask_cluster  # noqa: E402
from tests.support.old_envs import OLD_ENVS, build_env  # noqa: E402

WARM = r"""
import json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
from distributed import Client
from envcheck import verify_cluster
address, repeat = sys.argv[1], int(sys.argv[2])
client = Client(address, set_as_default=True)
verify_cluster(client, smoke="none")  # cold: the collector compiles on each worker
client.get_versions(check=True)
env, dist = [], []
for _ in range(repeat):
    t = time.perf_counter(); verify_cluster(client, smoke="none")
    env.append(time.perf_counter() - t)
    t = time.perf_counter(); client.get_versions(check=True)
    dist.append(time.perf_counter() - t)
client.close()
print(json.dumps({"envcheck": env, "get_versions": dist}))
"""

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    env = build_env(OLD_ENVS[0])
    with dask_cluster(env.python, args.workers) as address:
        verify_cmd = [env.envcheck, "verify", "cluster", address, "--smoke", "none", "--quiet"]
        bare_cmd = [env.python, "-c", BARE_CLIENT, address]
        proc_env, proc_bare, _ = alternate(verify_cmd, bare_cmd, args.repeat)
        out = subprocess.run([env.python, "-c", WARM, address, str(args.repeat)],
                             capture_output=True, text=True, check=True, cwd="/")
        warm = json.loads(out.stdout.strip().splitlines()[-1])
    py = subprocess.run(
        [env.python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"environment: Python {py}, dask/distributed 2022.7.1, {args.workers} workers, "
        f"{args.repeat} interleaved repeats (medians)"
    )
    rows = [
        (
            "process: verify cluster --smoke none",
            statistics.median(proc_env),
            "process: Client + get_versions(check=True)",
            statistics.median(proc_bare),
        ),
        (
            "warm: verify() facts round + checks",
            statistics.median(warm["envcheck"]),
            "warm: client.get_versions(check=True)",
            statistics.median(warm["get_versions"]),
        ),
    ]
    for a, ta, b, tb in rows:
        print(
            f"  {a:<42} {ta * 1000:9.1f} ms   {b:<44} {tb * 1000:8.1f} ms   ratio {ta / tb:5.2f}x"
        )


if __name__ == "__main__":
    main()
