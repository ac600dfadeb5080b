"""The text report of verify cluster stays readable at 64 workers: all passing it fits in 40
lines; with 2 of 64 workers skewed or failing, both come first, named with their hosts, and
the other 62 are grouped; the JSON keeps every result and grows linearly. Reports built from
facts through verify cluster's own judge (pipeline.judge) and smoke results as the suite
makes them."""

from __future__ import annotations

import dataclasses
import io
import json

from rich.console import Console

from envcheck.report import Report, Status
from envcheck.report_fold import fold_rows, node_with_hosts, passed_names
from envcheck.report_text import render
from envcheck.verify.across.processes import ClusterFacts
from envcheck.verify.across.workers import node_checks
from envcheck.verify.cluster.pipeline import judge
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts
from envcheck.verify.smoke.run import result

PACKAGES = {"dask": "2026.8.0", "distributed": "2026.8.0", "numpy": "2.4.6",
            "msgpack": "1.2.4", "cloudpickle": "3.1.3", "tornado": "6.6.1",
            "toolz": "1.2.0", "pandas": "3.1.1"}
HOSTS = 8
SKEWED = "tcp://10.0.0.6:40037"  # worker 37: on node5
FAILING = "tcp://10.0.0.3:40050"  # worker 50: on node2


def _facts(host: str, role: str, address: str, pid: int, numpy: str = "2.4.6") -> NodeFacts:
    packages = {**PACKAGES, "numpy": numpy}
    return NodeFacts(host=host, pid=pid, user="u", role=role, address=address,
                     python="3.11.7", python_executable="/env/bin/python",
                     platform="linux-64", glibc="2.35", packages=packages,
                     python_packages=dict(packages), package_source="importlib.metadata",
                     nvml_error="NVML Shared Library Not Found")


def _cluster(workers: int, skewed: str = "") -> ClusterFacts:
    ws = {}
    for w in range(workers):
        h = w % HOSTS
        address = f"tcp://10.0.0.{h + 1}:{40000 + w}"
        numpy = "1.26.4" if address == skewed else "2.4.6"
        ws[address] = _facts(f"node{h}", "worker", address, 1000 + w, numpy)
    return ClusterFacts(client=_facts("login", "client", "", 1),
                        scheduler=_facts("node0", "scheduler", "tcp://10.0.0.1:8786", 2),
                        workers=ws, expected_workers=tuple(ws))


def _report(workers: int, skewed: str = "", failing: str = "") -> Report:
    cluster = _cluster(workers, skewed)
    exp = Expectations()
    results, tables = judge(cluster, exp, node_checks(False, ()))
    for a in cluster.workers:
        if a == failing:
            results.append(result("submit", Status.FAIL, "task raised ZeroDivisionError", a))
        else:
            results.append(result("submit", Status.PASS, f"task ran on {a}", a))
    results.append(result("array", Status.PASS, "matrix product and arange sum match"))
    return Report("verify cluster", tuple(results), tables=tuple(tables),
                  hosts={a: f.host for a, f in cluster.workers.items()})


def _text(report: Report) -> list[str]:
    out = io.StringIO()
    render(report, console=Console(file=out, width=100, no_color=True))
    return out.getvalue().splitlines()


def test_64_passing_workers_on_8_hosts_fit_in_40_lines() -> None:
    report = _report(64)
    lines = _text(report)
    assert report.status is Status.PASS
    assert len(lines) <= 40, "\n".join(lines)
    # the 64 per-worker passes are one entry, the 8 hosts that agree one row of the hosts table
    assert any("smoke.submit[64 nodes]" in line for line in lines)
    assert any("7 rows: node1, node2, node3, +4 more" in line for line in lines)


def test_two_bad_workers_of_64_come_first_named_with_their_hosts() -> None:
    lines = _text(_report(64, skewed=SKEWED, failing=FAILING))
    head = "\n".join(lines[:8])
    assert f"[{FAILING} on node2]" in head
    assert f"[{SKEWED} on node5]" in head
    assert lines[0].startswith("FAIL  verify cluster")


def test_the_other_62_workers_are_grouped_not_listed() -> None:
    lines = _text(_report(64, skewed=SKEWED, failing=FAILING))
    text = "\n".join(lines)
    assert "smoke.submit[63 nodes]" in text  # the passes: all but the failing worker
    assert "63 workers = " in text  # the skew table: one column for those that agree
    assert "the same on every one: python 3.11.7, dask 2026.8.0" in text
    assert len(lines) <= 40, text
    addresses = {f"tcp://10.0.0.{h + 1}:{40000 + w}" for w in range(64) for h in [w % HOSTS]}
    named = {a for a in addresses if a in text}
    assert {SKEWED, FAILING} <= named and len(named) <= 8


def test_the_json_keeps_every_result_and_grows_linearly() -> None:
    sizes = {n: _report(n, SKEWED, FAILING).to_json() for n in (16, 32, 64)}
    data = sizes[64]
    submits = [r for r in data["results"] if r["check"] == "smoke.submit"]
    assert len(submits) == 64
    assert {r["node"] for r in submits if r["status"] == "fail"} == {FAILING}
    hosts_table = next(t for t in data["tables"] if t["title"].startswith("hosts"))
    assert len(hosts_table["rows"]) == HOSTS + 1  # every host, and the client's
    size = {n: len(json.dumps(d)) for n, d in sizes.items()}
    # linear: each worker adds about as many bytes from 32 to 64 as from 16 to 32
    per_worker = ((size[64] - size[32]) / 32, (size[32] - size[16]) / 16)
    assert 0.67 < per_worker[0] / per_worker[1] < 1.5


def test_rows_that_agree_fold_and_the_naming_columns_drop_out() -> None:
    rows = [(f"node{i}", f"10.0.0.{i}", "8 workers", "3.11.7") for i in range(8)]
    rows[0] = ("node0", "10.0.0.0", "scheduler, 8 workers", "3.11.7")
    folded = fold_rows(rows)
    assert folded[0] == (["node0"], 1, ("10.0.0.0", "scheduler, 8 workers", "3.11.7"))
    assert folded[1] == ([f"node{i}" for i in range(1, 8)], 2, ("8 workers", "3.11.7"))
    assert len(fold_rows(rows[:5])) == 5  # a short table keeps a row for each


def test_a_node_is_named_with_its_host_unless_it_says_it() -> None:
    hosts = {"tcp://10.0.0.3:1": "node2", "tcp://node4:1": "node4"}
    assert node_with_hosts("tcp://10.0.0.3:1, tcp://node4:1", hosts) == (
        "tcp://10.0.0.3:1 on node2, tcp://node4:1")
    assert node_with_hosts("rank 3", hosts) == "rank 3"


def test_a_check_on_many_nodes_is_counted_on_few_named() -> None:
    many = [result("submit", Status.PASS, "ok", f"w{i}") for i in range(5)]
    few = [dataclasses.replace(r, check="smoke.array") for r in many[:2]]
    assert passed_names(many + few) == [
        "smoke.submit[5 nodes]", "smoke.array[w0]", "smoke.array[w1]"]
