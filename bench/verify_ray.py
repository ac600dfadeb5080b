"""`envcheck verify ray ADDRESS` against a bare Ray client script, on a local 2-node cluster.

The cluster: a head and a second node (`ray start`, two raylets on this machine, 1 CPU each),
started once and killed by process group at the end (never `ray stop`). The baseline is the
least a Ray preflight can cost: `ray.init(address)`, `ray.nodes()`, one remote task pinned to
each node, `ray.shutdown()`. The subject is the whole `verify ray` process: facts of every
node, the GPU tasks (none here: no GPU), the checks, the report. Whole processes in turn
(A B A B ...), the ratio taken pair by pair, the median reported. Target: at most 2x.

    python bench/verify_ray.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
RAY = str(Path(sys.executable).parent / "ray")

BARE = """
import sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], log_to_driver=False)
nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
@ray.remote(num_cpus=0)
def where():
    return ray.get_runtime_context().get_node_id()
got = ray.get([where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False))
               .remote() for n in nodes])
assert sorted(got) == sorted(nodes), (got, nodes)
ray.shutdown()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT, env=ENV,
                            start_new_session=True)


def _wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} exited {p.returncode}: {p.stdout[-800:]}{p.stderr[-800:]}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ecrb"))
    port = _free_port()
    address = f"127.0.0.1:{port}"
    procs = [_start([RAY, "start", "--head", "--block", "--port", str(port), "--num-cpus", "1",
                     "--include-dashboard", "false", "--node-ip-address", "127.0.0.1",
                     "--temp-dir", str(tmp / "ray")], tmp / "head.log")]
    try:
        time.sleep(5)
        procs.append(_start([RAY, "start", "--address", address, "--block", "--num-cpus", "1",
                             "--node-ip-address", "127.0.0.1"], tmp / "node.log"))
        wait = ("import ray,sys,time; ray.init(address=sys.argv[1]); end=time.time()+60\n"
                "while sum(n['Alive'] for n in ray.nodes()) < 2: "
                "assert time.time() < end; time.sleep(0.3)")
        subprocess.run([sys.executable, "-c", wait, address], check=True, env=ENV,
                       capture_output=True, timeout=120)
        bare = [sys.executable, "-c", BARE, address]
        subject = [sys.executable, "-m", "envcheck", "verify", "ray", address,
                   "--expect-nodes", "2", "--quiet"]
        _wall(bare), _wall(subject)  # warm the page cache and Ray's per-job setup once
        pairs = [(_wall(bare), _wall(subject)) for _ in range(args.runs)]
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    for b, s in pairs:
        print(f"bare {b:6.2f} s   verify ray {s:6.2f} s   ratio {s / b:5.2f}")
    print(f"median: bare {statistics.median(b for b, _ in pairs):.2f} s, verify ray "
          f"{statistics.median(s for _, s in pairs):.2f} s, ratio "
          f"{statistics.median(s / b for b, s in pairs):.2f}x (target <= 2x); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
