"""verify cluster across hosts: a scheduler, two worker hosts and a client, each in its own
network namespace with its own hostname, talking TCP over a bridge."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.hosts.netns import Hosts

PORT = 8786
START = 60.0


def start_cluster(hosts: Hosts, tmp: Path, worker_python: dict[str, str] | None = None,
                  protocol: str = "tcp", python: str = sys.executable,
                  env: dict[str, str] | None = None) -> str:
    """Scheduler on `sched`, one worker on each of hostA and hostB; returns the address.

    `python` runs the scheduler, the workers (unless `worker_python` names another for a host)
    and the client; `env` is added to every process's environment."""
    address = f"{protocol}://{hosts.ip('sched')}:{PORT}"
    hosts.start("sched", [
        python, "-m", "distributed.cli.dask_scheduler", "--protocol", protocol,
        "--host", hosts.ip("sched"), "--port", str(PORT), "--dashboard-address", "127.0.0.1:0",
    ], tmp / "scheduler.log", env=env, cwd=tmp)
    for host in ("hostA", "hostB"):
        worker = (worker_python or {}).get(host, python)
        hosts.start(host, [
            worker, "-m", "distributed.cli.dask_worker", address, "--host", hosts.ip(host),
            "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"{host}-0",
            "--local-directory", str(tmp / host),
        ], tmp / f"{host}.log", env=env, cwd=tmp)
    waited = hosts.run("client", [
        python, "-c",
        "import sys, distributed as d; "
        f"c = d.Client(sys.argv[1], timeout={START}); c.wait_for_workers(2, timeout={START})",
        address,
    ], timeout=START + 10, env=env)
    logs = "".join(p.read_text()[-800:] for p in tmp.glob("*.log"))
    assert waited.returncode == 0, waited.stderr[-1500:] + logs
    return address


def verify(hosts: Hosts, tmp: Path, address: str, *flags: str, smoke: str = "submit",
           python: str = sys.executable, env: dict[str, str] | None = None):
    out = tmp / "report.json"
    t0 = time.monotonic()
    p = hosts.run("client", [
        python, "-m", "envcheck", "verify", "cluster", address, "--smoke", smoke,
        "--json", str(out), "--quiet", *flags,
    ], timeout=120, env=env, cwd=tmp)
    assert out.exists(), p.stdout + p.stderr
    (tmp / "verify-client.log").write_text(p.stderr)  # beside the daemons' logs
    return p.returncode, json.loads(out.read_text()), time.monotonic() - t0


def hosts_table(report: dict) -> dict[str, list[str]]:
    (table,) = [t for t in report["tables"] if t["title"].startswith("hosts")]
    return {row[0]: row for row in table["rows"]}


def test_cluster_over_three_hosts_passes_and_is_reported_per_host(hosts, tmp_path):
    # These hostnames resolve to nothing, so gloo on its own would fall back to loopback and
    # the all-reduce across hosts would hang: the ranks name the interface towards the master
    # (smoke/tasks.py), which this test proves by not setting GLOO_SOCKET_IFNAME.
    address = start_cluster(hosts, tmp_path)
    rc, report, _ = verify(hosts, tmp_path, address, "--bench")
    assert rc == 0, [r for r in report["results"] if r["status"] in ("fail", "error")]
    rows = hosts_table(report)
    assert set(rows) == {"sched", "hostA", "hostB", "client"}
    assert rows["hostB"][1] == hosts.ip("hostB") and "worker tcp://10.77.0.3" in rows["hostB"][2]
    workers = next(r for r in report["results"] if r["check"] == "workers")
    assert "on 2 host(s): hostA (1), hostB (1)" in workers["message"]
    skew = next(r for r in report["results"] if r["check"] == "hosts.skew")
    assert skew["status"] == "pass"
    # every worker's node checks ran, on its own host's facts
    nodes = {r["node"] for r in report["results"] if r["group"] == "node"}
    assert {n.split("//")[1].split(":")[0] for n in nodes} == {hosts.ip("hostA"), hosts.ip("hostB")}
    # --bench: the transfer between the hosts is judged against their link, the veth pair's
    # 10000 Mb/s (as the workers' facts read it) at ~90% of line rate
    transfers = [m for m in report["measurements"] if m["name"].startswith("transfer tcp")]
    assert len(transfers) == 2 and all(m["reference"] == 1.125 for m in transfers), transfers
    ends = {m["node"] for m in transfers}  # one pair, "tcp://10.77.0.2:N -> tcp://10.77.0.3:M"
    assert len(ends) == 1
    assert sorted(e.split("//")[1].split(":")[0] for e in ends.pop().split(" -> ")) == [
        hosts.ip("hostA"), hosts.ip("hostB")
    ]
    assert all(
        m["verdict"] == "" or "(network eth0 10000 Mb/s <-> eth0 10000 Mb/s" in m["verdict"]
        for m in transfers
    )
    # the gloo all-reduce ran across the two hosts (no GLOO_SOCKET_IFNAME given)
    assert any(m["name"].startswith("gloo all-reduce") for m in report["measurements"]), [
        m["name"] for m in report["measurements"]
    ]


def test_host_with_another_worker_env_fails_skew_naming_it(hosts, tmp_path,
                                                           venv_with_other_msgpack):
    address = start_cluster(hosts, tmp_path, {"hostB": venv_with_other_msgpack})
    rc, report, _ = verify(hosts, tmp_path, address)
    assert rc == 2
    (bad,) = [r for r in report["results"] if r["check"] == "hosts.skew"]
    assert bad["status"] == "fail" and bad["node"] == "hostB"
    assert "host hostB (1 process) differs from the scheduler's host sched: msgpack" in (
        bad["message"]
    )
    assert not any(r["node"] == "hostA" for r in report["results"] if r["check"] == "hosts.skew")


def test_host_whose_link_goes_down_is_an_error_naming_it_within_the_timeout(hosts, tmp_path):
    address = start_cluster(hosts, tmp_path)
    hosts.link("hostB", up=False)  # the cluster is up; hostB drops off the network, unannounced
    rc, report, seconds = verify(hosts, tmp_path, address, "--timeout", "3")
    assert rc == 3
    (gone,) = [r for r in report["results"] if r["check"] == "hosts.unreachable"]
    assert gone["status"] == "error" and gone["node"] == hosts.ip("hostB")
    assert "no answer within 3 s" in gone["message"]
    assert hosts_table(report)["?"][-1] == "no"
    assert any(r["check"] == "smoke.submit" and r["status"] == "pass" for r in report["results"])
    # the facts round waited for hostB no longer than its deadline (an open TCP connection to
    # a host that vanished would otherwise hang for as long as TCP retransmits: minutes)
    (facts_round,) = [m["value"] for m in report["measurements"] if m["name"] == "facts round"]
    assert facts_round < 3 + 1.5
    assert seconds < 60  # the whole process: client start, rounds, the smoke task, exit
