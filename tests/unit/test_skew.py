"""Version skew between processes: pure, from NodeFacts descriptions."""

from __future__ import annotations

import dataclasses

import pytest

from envcheck.report import Result, Status
from envcheck.verify.across.skew import (
    TRACKED,
    canonical_name,
    compare_package,
    skew_by_process,
    skew_report,
    wire_skew,
)
from envcheck.verify.facts import NodeFacts
from tests.support.factories import no_driver_node

BASE = {
    "dask": "2024.1.1",
    "distributed": "2024.1.1",
    "msgpack": "1.0.7",
    "cloudpickle": "3.0.0",
    "tornado": "6.4",
    "numpy": "1.26.4",
}


def proc(role: str, python: str = "3.11.7", **versions: str | None) -> NodeFacts:
    """A process of a CPU cluster whose Python distributions are BASE with overrides."""
    pkgs = {**BASE, **{k.replace("_", "-"): v for k, v in versions.items()}}
    pkgs = {k: v for k, v in pkgs.items() if v is not None}
    return dataclasses.replace(
        no_driver_node(), role=role, python=python, packages={}, python_packages=pkgs
    )


def cluster(**workers: NodeFacts) -> dict[str, NodeFacts]:
    procs = {"client": proc("client"), "scheduler": proc("scheduler")}
    procs.update({f"tcp://10.0.0.{i}:4000": f for i, f in enumerate(workers.values(), 1)})
    return procs


def results_for(procs: dict[str, NodeFacts], extra: tuple[str, ...] = ()):
    return skew_report(procs, extra)


def test_identical_processes_pass_with_one_result_and_grouped_workers() -> None:
    table, results = results_for(cluster(a=proc("worker"), b=proc("worker"), c=proc("worker")))
    assert [(r.check, r.status) for r in results] == [("skew", Status.PASS)]
    # client, scheduler, one column for three identical workers
    assert table.columns[0] == "package" and table.columns[-1] == "verdict"
    assert table.columns[1:3] == ("client", "scheduler")
    assert table.columns[3].startswith("3 workers: tcp://10.0.0.1:4000")
    assert len(table.columns) == 5
    rows = {r[0]: r for r in table.rows}
    assert rows["cloudpickle"] == ("cloudpickle", "3.0.0", "3.0.0", "3.0.0", "ok")
    assert "torch" not in rows  # tracked but installed nowhere: no row


def test_one_worker_with_other_cloudpickle_fails_naming_it_and_both_versions() -> None:
    odd = proc("worker", cloudpickle="3.1.1")
    table, results = results_for(cluster(a=proc("worker"), b=odd, c=proc("worker")))
    (r,) = [r for r in results if r.check == "skew.cloudpickle"]
    assert r.status is Status.FAIL
    assert r.node == "tcp://10.0.0.2:4000"
    assert "worker tcp://10.0.0.2:4000 has 3.1.1" in r.message
    assert "client, scheduler" in r.message and "3.0.0" in r.message
    assert "cloudpickle==3.0.0" in r.fix
    # the odd worker gets its own column; the other two stay grouped
    assert any(c == "worker tcp://10.0.0.2:4000" for c in table.columns)
    assert any(c.startswith("2 workers:") for c in table.columns)
    assert {row[0]: row[-1] for row in table.rows}["cloudpickle"] == "fail"


@pytest.mark.parametrize("package", ["dask", "distributed", "msgpack", "cloudpickle", "torch"])
def test_critical_packages_fail(package: str) -> None:
    procs = cluster(a=proc("worker", **{package: "9.9.9"}), b=proc("worker", **{package: "1.0"}))
    procs["client"] = proc("client", **{package: "1.0"})
    procs["scheduler"] = proc("scheduler", **{package: "1.0"})
    (r,) = [r for r in skew_report(procs)[1] if r.check == f"skew.{package}"]
    assert r.status is Status.FAIL and "9.9.9" in r.message and "1.0" in r.message


@pytest.mark.parametrize("package", ["tornado", "numpy", "pandas", "lz4", "xgboost"])
def test_other_tracked_packages_warn(package: str) -> None:
    procs = cluster(a=proc("worker", **{package: "2.0"}), b=proc("worker", **{package: "1.0"}))
    procs["client"] = proc("client", **{package: "1.0"})
    procs["scheduler"] = proc("scheduler", **{package: "1.0"})
    (r,) = [r for r in skew_report(procs)[1] if r.check == f"skew.{package}"]
    assert r.status is Status.WARN
    assert r.node == "tcp://10.0.0.1:4000"


def test_absent_versus_present_counts_as_a_difference() -> None:
    procs = cluster(a=proc("worker"), b=proc("worker", msgpack=None))
    (r,) = [r for r in skew_report(procs)[1] if r.check == "skew.msgpack"]
    assert r.status is Status.FAIL
    assert "worker tcp://10.0.0.2:4000 lacks it" in r.message
    table = skew_report(procs)[0]
    assert "-" in {row[0]: row for row in table.rows}["msgpack"]


def test_python_micro_difference_warns_minor_difference_fails() -> None:
    micro = cluster(a=proc("worker", python="3.11.9"))
    (r,) = [r for r in skew_report(micro)[1] if r.check == "skew.python"]
    assert r.status is Status.WARN
    minor = cluster(a=proc("worker", python="3.12.1"))
    (r,) = [r for r in skew_report(minor)[1] if r.check == "skew.python"]
    assert r.status is Status.FAIL and "3.12.1" in r.message and "3.11.7" in r.message


def test_client_alone_differing_is_the_odd_one() -> None:
    procs = cluster(a=proc("worker"), b=proc("worker"))
    procs["client"] = proc("client", dask="2023.1.0")
    (r,) = [r for r in skew_report(procs)[1] if r.check == "skew.dask"]
    assert r.node == "client"
    assert r.message.startswith("dask differs: client has 2023.1.0;")


def test_lock_packages_are_compared_and_shown_only_when_they_differ() -> None:
    procs = cluster(a=proc("worker", pyarrow="14.0.1"), b=proc("worker", pyarrow="15.0.0"))
    procs["client"] = proc("client", pyarrow="14.0.1", zict="3.0.0")
    procs["scheduler"] = proc("scheduler", pyarrow="14.0.1", zict="3.0.0")
    table, results = skew_report(procs, extra_packages=("pyarrow", "zict", "click"))
    rows = {row[0] for row in table.rows}
    assert "pyarrow" in rows  # differs
    assert "click" not in rows  # installed nowhere
    (r,) = [r for r in results if r.check == "skew.pyarrow"]
    assert r.status is Status.WARN and r.node == "tcp://10.0.0.2:4000"
    # zict: client and scheduler have it, workers lack it
    (z,) = [r for r in results if r.check == "skew.zict"]
    assert z.status is Status.WARN and "lack it" in z.message


def test_pip_and_conda_names_meet_on_one_row() -> None:
    assert canonical_name("cudf-cu12") == "cudf"
    assert canonical_name("dask_cudf_cu12") == "dask-cudf"
    assert canonical_name("cupy-cuda12x") == "cupy"
    assert canonical_name("pytorch") == "torch"
    assert canonical_name("py-xgboost") == "xgboost"
    conda = dataclasses.replace(
        proc("worker"), packages={"pytorch": "2.1.0", "cupy": "13.0.0"}, python_packages={}
    )
    pip = proc("worker", torch="2.1.0", cupy_cuda12x="13.0.0")
    procs = {"client": pip, "scheduler": pip, "tcp://a:1": conda, "tcp://b:1": pip}
    _, results = skew_report(procs)
    assert not [r for r in results if r.check in ("skew.torch", "skew.cupy")]


def test_compare_package_prefers_client_version_on_a_tie() -> None:
    status, message, odd, ref = compare_package(
        "numpy", {"client": "1.0", "scheduler": "1.0", "tcp://a:1": "2.0", "tcp://b:1": "2.0"}
    )
    assert ref == "1.0" and set(odd) == {"tcp://a:1", "tcp://b:1"}
    assert status is Status.WARN


def test_tracked_list_covers_the_issue() -> None:
    for name in ("python", "dask", "distributed", "msgpack", "cloudpickle", "torch", "rmm",
                 "ucx-py", "ucxx", "distributed-ucxx", "dask-cuda", "dask-cudf", "cudf"):
        assert name in TRACKED


def test_skew_by_process_names_each_process_a_failing_or_warning_skew_names() -> None:
    results = [
        Result("skew.distributed", Status.FAIL, "differs", node="tcp://w1:1, tcp://w2:2"),
        Result("skew.numpy", Status.WARN, "differs", node="tcp://w1:1"),
        Result("skew", Status.PASS, "all identical"),
        Result("gpus", Status.FAIL, "not skew", node="tcp://w3:3"),
    ]
    by = skew_by_process(results)
    assert by == {"tcp://w1:1": ("skew.distributed", "skew.numpy"),
                  "tcp://w2:2": ("skew.distributed",)}
    assert wire_skew(by["tcp://w1:1"]) == ("skew.distributed",)
    assert wire_skew(("skew.numpy", "skew.torch")) == ()
