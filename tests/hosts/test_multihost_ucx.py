"""verify cluster across namespaced hosts over UCX (UCX_TLS=tcp,self on each host's eth0).

Everything here (scheduler, workers, the verifying client) runs from the UCX environment of
tests/hosts/conftest.py: distributed-ucxx cannot join the test environment (another
distributed)."""

from __future__ import annotations

import sys

import pytest

from tests.hosts.netns import Hosts
from tests.hosts.test_multihost import hosts_table, start_cluster, verify

# UCX over TCP only (no GPU, no shared memory across "hosts"), on the namespaces' only link
UCX_ENV = {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "eth0"}


@pytest.mark.oldenv  # the UCX environment is an old env (tests/support/old_envs.py)
def test_cluster_over_ucx_across_hosts_passes_with_ucx_transports_reported(
    hosts: Hosts, tmp_path, ucx_env
):
    address = start_cluster(hosts, tmp_path, protocol="ucx", python=ucx_env.python, env=UCX_ENV)
    assert address.startswith("ucx://")
    rc, report, _ = verify(
        hosts, tmp_path, address, smoke="submit,array", python=ucx_env.python, env=UCX_ENV
    )
    bad = [r for r in report["results"] if r["status"] in ("fail", "error")]
    logs = "".join(f"\n== {p.name}\n" + p.read_text()[-3000:] for p in tmp_path.glob("*.log"))
    assert rc == 0, f"{bad}{logs}"
    rows = hosts_table(report)
    assert set(rows) == {"sched", "hostA", "hostB", "client"}
    for host in ("hostA", "hostB"):
        assert rows[host][1] == hosts.ip(host)
        assert f"worker ucx://{hosts.ip(host)}:" in rows[host][2]
    passed = {(r["check"], r["node"]) for r in report["results"] if r["status"] == "pass"}
    workers = {f"ucx://{hosts.ip(h)}" for h in ("hostA", "hostB")}
    submit = {n.rsplit(":", 1)[0] for c, n in passed if c == "smoke.submit"}
    assert submit == workers
    assert any(c == "smoke.array" for c, _ in passed)  # chunks moved between the hosts
    # each worker's node checks ran on its own host: the ucxx binding, libucx's version and
    # the transports its ucx_info lists; UCX_NET_DEVICES names a link that is up there
    for check in ("ucx", "net-devices"):
        found = [r for r in report["results"] if r["check"] == check and r["group"] == "node"]
        assert {r["node"].rsplit(":", 1)[0] for r in found} == workers, check
        assert all(r["status"] == "pass" for r in found), found
    for r in (r for r in report["results"] if r["check"] == "ucx"):
        assert r["message"].startswith("ucxx 0.52") and ", UCX 1.21" in r["message"], r
        transports = r["message"].split("transports ", 1)[1].split(", ")
        assert {"tcp", "self"} <= set(transports), r
    assert "eth0 up" in next(r for r in report["results"] if r["check"] == "net-devices")[
        "message"
    ]
    (stack,) = [r for r in report["results"] if r["check"] == "stack-agreement.ucx"]
    assert stack["status"] == "pass" and "(hostA, hostB)" in stack["message"]

    # check_address: the UCX env took the ucx:// address above; the test env, which lacks
    # distributed-ucxx, refuses the same live address as bad input before connecting
    plain = hosts.run("client", [
        sys.executable, "-m", "envcheck", "verify", "cluster", address, "--quiet",
    ], timeout=60, cwd=tmp_path)
    assert plain.returncode == 4, plain.stdout + plain.stderr
    assert "a ucx:// address needs distributed-ucxx installed where envcheck runs" in plain.stderr
