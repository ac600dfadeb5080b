"""The per-host view of a cluster, on described processes (no cluster needed)."""

from __future__ import annotations

import dataclasses

from envcheck.report import Result, Status
from envcheck.verify.across.hosts import address_host, hosts_view, spans_hosts
from envcheck.verify.across.processes import ClusterFacts
from tests.support.factories import no_driver_node


def proc(host: str, address: str, role: str = "worker", **packages: str):
    base = no_driver_node()
    pk = {**base.packages, **packages}
    return dataclasses.replace(base, host=host, address=address, role=role, packages=pk,
                               python_packages=pk)


def cluster(workers, expected=None, errors=()):
    return ClusterFacts(
        client=proc("login", "", "client"),
        scheduler=proc("sched", "tcp://10.0.0.1:8786", "scheduler"),
        workers=workers,
        errors=tuple(errors),
        expected_workers=tuple(expected or workers),
    )


def test_address_host():
    assert address_host("tcp://10.0.0.7:40123") == "10.0.0.7"
    assert address_host("ucx://[fe80::1]:9000") == "fe80::1"
    assert address_host("inproc://10.0.0.7/123/1") == "10.0.0.7/123/1"


def test_a_host_with_other_versions_is_named_and_the_table_has_a_row_per_host():
    c = cluster({
        "tcp://10.0.0.2:1": proc("gpu1", "tcp://10.0.0.2:1"),
        "tcp://10.0.0.3:1": proc("gpu2", "tcp://10.0.0.3:1", msgpack="1.0.0"),
    })
    assert spans_hosts(c)
    table, results = hosts_view(c)
    assert [row[0] for row in table.rows] == ["gpu1", "gpu2", "login", "sched"]
    (bad,) = [r for r in results if r.status is Status.FAIL]
    assert bad.node == "gpu2" and "msgpack 1.0.0" in bad.message
    assert not any(r.node in ("gpu1", "login") for r in results)  # only the odd host is named


def test_a_silent_host_is_an_error_named_by_its_address():
    addr = "tcp://10.0.0.3:1"
    err = Result("facts", Status.ERROR, "worker did not report: no answer within 5 s: hung",
                 node=addr)
    c = cluster({"tcp://10.0.0.2:1": proc("gpu1", "tcp://10.0.0.2:1")},
                expected=["tcp://10.0.0.2:1", addr], errors=[err])
    table, results = hosts_view(c)
    (gone,) = [r for r in results if r.check == "hosts.unreachable"]
    assert gone.status is Status.ERROR and gone.node == "10.0.0.3"
    assert "no answer within 5 s" in gone.message
    assert table.rows[-1][1] == "10.0.0.3" and table.rows[-1][-1] == "no"


def test_one_host_does_not_span_hosts():
    one = ClusterFacts(
        client=proc("vm", "", "client"), scheduler=proc("vm", "tcp://127.0.0.1:1", "scheduler"),
        workers={"tcp://127.0.0.1:2": proc("vm", "tcp://127.0.0.1:2")},
        expected_workers=("tcp://127.0.0.1:2", "tcp://127.0.0.1:3"),
    )
    assert not spans_hosts(one)  # a silent worker at a known address: not a host of its own
