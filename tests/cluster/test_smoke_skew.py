"""A worker whose distributed differs from the client's: a real subprocess cluster of four
workers from this environment and one from a venv of distributed 2025.1.0 (the Python of this
environment, so only the wire differs). Its skew is found first, it is given no smoke test that
could crash it, and when a worker dies under a test anyway the report blames the skew found on
it while the other workers' results stay."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from tests.support.deadlines import HANG
from tests.support.old_envs import EnvSpec, build_env
from tests.support.subprocess_cluster import run_envcheck, start_cluster

pytestmark = [pytest.mark.slow, pytest.mark.oldenv]

MINOR = f"{sys.version_info.major}.{sys.version_info.minor}"
OLD_DISTRIBUTED = EnvSpec(
    f"dask-2025.1.0-py{MINOR}", MINOR, ("dask==2025.1.0", "distributed==2025.1.0", "numpy"),
    "a worker left on last year's dask beside a current client",
)
HEALTHY = ("a", "b", "c", "d")


@pytest.fixture
def mixed(tmp_path: Path):  # noqa: ANN201 - (cluster, name -> address)
    old = build_env(OLD_DISTRIBUTED, with_envcheck=False)
    cluster = start_cluster(tmp_path / "cluster")
    try:
        for name in HEALTHY:
            cluster.add_worker(name)
        cluster.add_worker("old", python=old.python)
        yield cluster, cluster.wait_for_workers([*HEALTHY, "old"])
    finally:
        cluster.stop()


def _by_check(report: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in json.loads(report.read_text())["results"]:
        out.setdefault(r["check"], []).append(r)
    return out


def test_a_worker_with_wire_skew_is_held_out_of_the_smoke_tests_and_survives(
    mixed, tmp_path: Path
) -> None:
    cluster, addresses = mixed
    report = tmp_path / "r.json"
    proc, _ = run_envcheck("verify", "cluster", cluster.address, "--smoke", "submit,array",
                           "--timeout", "30", "--json", str(report), timeout=300)
    assert proc.returncode == ExitCode.FAIL, proc.stdout[-3000:] + proc.stderr[-2000:]
    results = _by_check(report)
    (dist,) = results["skew.distributed"]
    assert dist["status"] == "fail" and dist["node"] == addresses["old"]
    submit = {r["node"]: r for r in results["smoke.submit"]}
    assert set(submit) == set(addresses.values())  # one result per worker: 5, not 3
    assert [submit[addresses[n]]["status"] for n in HEALTHY] == ["pass"] * 4
    held = submit[addresses["old"]]
    assert held["status"] == "skip" and "skew.distributed" in held["message"], held
    array = [r for r in results["smoke.array"] if r["status"] == "pass"]
    # the array test runs on 2 workers chosen among the 4 healthy ones: the skewed one held out
    assert array and "of 4 workers" in array[0]["message"], array
    assert cluster.workers["old"].poll() is None, "the skewed worker was crashed"
    log = (cluster.workdir / "worker-old.log").read_text()
    assert "UnpicklingError" not in log, log[-2000:]


def test_a_worker_that_dies_under_a_test_is_blamed_on_its_skew_and_the_rest_stay(mixed) -> None:
    from distributed import Client

    from envcheck.verify.cluster.gather import gather_facts
    from envcheck.verify.smoke.suite import run_smoke

    cluster, addresses = mixed
    old = addresses["old"]
    with Client(cluster.address, timeout=30) as client:
        facts = gather_facts(client, 30).workers
        assert set(facts) == set(addresses.values())
        # skew the judge does not count as a wire difference: the worker is not held out, its
        # task is sent, and distributed 2025.1.0 dies unpickling it
        results = run_smoke(client, facts, {"submit"}, timeout=60,
                            skewed={old: ("skew.numpy",)})
    by_node = {r.node: r for r in results}
    assert set(by_node) == set(addresses.values()), results
    assert [by_node[addresses[n]].status.value for n in HEALTHY] == ["pass"] * 4
    dead = by_node[old]
    assert dead.status.value == "error", dead
    assert "skew.numpy" in dead.message and "out of memory" not in dead.message, dead
    assert cluster.workers["old"].wait(timeout=HANG) is not None  # it did die
