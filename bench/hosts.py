"""verify cluster across 3 namespaced hosts against the same worker count on one host.

Network namespaces as hosts (tests/hosts/netns.py): a scheduler host, worker hosts and a
client host joined by a bridge, TCP only. In the same run, interleaved, --repeat times:

- one host: 3 workers in one namespace, scheduler and client in their own;
- three hosts: 1 worker in each of 3 namespaces (own hostnames), same scheduler and client.

Each time is `envcheck verify cluster ADDRESS --smoke submit --quiet` in the client's host,
process start to exit (the facts round, checks, per-host table, one task per worker).

    sudo python bench/hosts.py [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.hosts.netns import Hosts, namespaced_hosts  # noqa: E402

PORT = 8786


def cluster(h: Hosts, tmp: Path, workers: list[str], port: int) -> str:
    address = f"tcp://{h.ip('sched')}:{port}"
    h.start(
        "sched",
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            h.ip("sched"),
            "--port",
            str(port),
            "--dashboard-address",
            "127.0.0.1:0",
        ],
        tmp / f"sched-{port}.log",
    )
    for i, host in enumerate(workers):
        h.start(
            host,
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--host",
                h.ip(host),
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--local-directory",
                str(tmp / f"w{port}-{i}"),
            ],
            tmp / f"w{port}-{i}.log",
        )
    p = h.run(
        "client",
        [
            sys.executable,
            "-c",
            "import sys, distributed as d; "
            "d.Client(sys.argv[1], timeout=60).wait_for_workers(3, timeout=60)",
            address,
        ],
        timeout=90,
    )
    assert p.returncode == 0, p.stderr
    return address


def verify(h: Hosts, address: str) -> float:
    t0 = time.monotonic()
    p = h.run(
        "client",
        [
            sys.executable,
            "-m",
            "envcheck",
            "verify",
            "cluster",
            address,
            "--smoke",
            "submit",
            "--quiet",
        ],
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hosts-"))
    with namespaced_hosts("sched", "h1", "h2", "h3", "client") as h:
        one = cluster(h, tmp, ["h1", "h1", "h1"], PORT)
        three = cluster(h, tmp, ["h1", "h2", "h3"], PORT + 1)
        verify(h, one), verify(h, three)  # warm both
        times: dict[str, list[float]] = {"one host": [], "three hosts": []}
        for _ in range(args.repeat):
            times["one host"].append(verify(h, one))
            times["three hosts"].append(verify(h, three))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:12s} median {med[k]:6.2f} s  runs {', '.join(f'{x:.2f}' for x in v)}")
    print(f"ratio three hosts / one host: {med['three hosts'] / med['one host']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"runs": times, "median": med}, indent=2))


if __name__ == "__main__":
    main()
