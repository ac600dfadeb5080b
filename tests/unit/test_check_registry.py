"""The check registries: cluster checks are pure functions of ClusterFacts built here; the
catalog (a static table) held equal to every registry; --skip and --list-checks by one id."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import BadInput, ExitCode
from envcheck.report import Result, Status
from envcheck.verify import catalog
from envcheck.verify.across.processes import ClusterFacts
from envcheck.verify.cluster.pipeline import judge
from envcheck.verify.cluster.registry import CLUSTER_CHECKS, run_cluster_checks
from envcheck.verify.expect_values import names
from envcheck.verify.expectations import Expectations
from envcheck.verify.node.checks import BUILTIN_CHECKS
from envcheck.verify.smoke.suite import SMOKE_TESTS
from tests.support.factories import healthy_a100x8, no_driver_node, with_env


def _worker(base, host: str, port: int, cvd: str | None = None, **packages: str):
    f = with_env(base, CUDA_VISIBLE_DEVICES=cvd) if cvd is not None else base
    pk = {**f.python_packages, **packages}
    return dataclasses.replace(f, host=host, address=f"tcp://{host}:{port}", role="worker",
                               pid=port, own_pids=(port,), python_packages=pk)


def _cluster(workers: dict, expected: tuple = ()) -> ClusterFacts:
    base = no_driver_node()
    return ClusterFacts(
        client=dataclasses.replace(base, host="login", role="client"),
        scheduler=dataclasses.replace(base, host="login", role="scheduler",
                                      address="tcp://login:8786"),
        workers=workers,
        expected_workers=expected or tuple(sorted(workers)),
    )


def _by(results: list[Result], check: str) -> list[Result]:
    return [r for r in results if r.check == check]


# --- the cluster registry: pure functions of one signature ----------------------------------


def test_every_cluster_check_takes_cluster_facts_and_expectations_and_has_a_description():
    for check_id, fn in CLUSTER_CHECKS.items():
        assert list(inspect.signature(fn).parameters) == ["cluster", "exp"], check_id
        assert (fn.__doc__ or "").strip(), f"{check_id} has no docstring"


def test_pinning_is_a_pure_function_of_described_workers():
    a100 = healthy_a100x8()
    # two workers of one host told to use GPU 0 both: the pinning check names both
    shared = _cluster({
        "tcp://gpu1:1": _worker(a100, "gpu1", 1, cvd="0"),
        "tcp://gpu1:2": _worker(a100, "gpu1", 2, cvd="0"),
    })
    results = CLUSTER_CHECKS["pinning"](shared, Expectations())
    failing = [r for r in results if r.status is Status.FAIL]
    assert failing and all(isinstance(r, Result) for r in results)
    assert any("tcp://gpu1:1" in r.message and "tcp://gpu1:2" in r.message for r in failing)
    # the same call on the same facts gives the same answer: nothing is read from anywhere else
    assert CLUSTER_CHECKS["pinning"](shared, Expectations()) == results


def test_a_cluster_check_reports_under_its_own_id_or_an_aspect_of_it():
    a100 = healthy_a100x8()
    clusters = [
        _cluster({"tcp://gpu1:1": _worker(a100, "gpu1", 1, cvd="0"),
                  "tcp://gpu1:2": _worker(a100, "gpu1", 2, cvd="0"),
                  "tcp://gpu2:1": _worker(no_driver_node(), "gpu2", 1, msgpack="0.9.0")},
                 expected=("tcp://gpu1:1", "tcp://gpu1:2", "tcp://gpu2:1", "tcp://gpu3:1")),
        _cluster({"tcp://cpu:1": _worker(no_driver_node(), "cpu", 1)}),
    ]
    for c in clusters:
        for check_id, fn in CLUSTER_CHECKS.items():
            for r in fn(c, Expectations()):
                assert r.check == check_id or r.check.startswith(f"{check_id}."), (check_id, r)


def test_membership_counts_silent_workers_and_skew_names_the_odd_one():
    base = no_driver_node()
    c = _cluster(
        {"tcp://gpu1:1": _worker(base, "gpu1", 1),
         "tcp://gpu1:2": _worker(base, "gpu1", 2, msgpack="0.9.0")},
        expected=("tcp://gpu1:1", "tcp://gpu1:2", "tcp://gpu1:3"),
    )
    (members,) = CLUSTER_CHECKS["workers"](c, Expectations())
    assert members.status is Status.ERROR and "2 of 3 workers reported" in members.message
    skew = CLUSTER_CHECKS["skew"](c, Expectations())
    (msgpack,) = _by(skew, "skew.msgpack")
    assert msgpack.status is Status.FAIL and "tcp://gpu1:2" in msgpack.node


def test_a_cluster_check_that_raises_is_an_error_naming_it_and_the_rest_still_run():
    def broken(cluster, exp):
        raise KeyError("gpus")

    checks = {"broken": broken, "workers": CLUSTER_CHECKS["workers"]}
    c = _cluster({"tcp://gpu1:1": _worker(no_driver_node(), "gpu1", 1)})
    out = run_cluster_checks(c, Expectations(), checks=checks)
    assert out[0].check == "broken" and out[0].status is Status.ERROR
    assert "KeyError" in out[0].message
    assert _by(out, "workers")[0].status is Status.PASS


def test_judge_skips_cluster_and_node_checks_once_each_and_drops_their_tables():
    from envcheck.verify.across.workers import node_checks

    base = no_driver_node()
    c = _cluster({"tcp://gpu1:1": _worker(base, "gpu1", 1),
                  "tcp://gpu1:2": _worker(base, "gpu1", 2)})
    skip = frozenset({"skew", "pinning", "glibc"})
    exp = Expectations(skip=skip)
    results, tables = judge(c, exp, node_checks(False, skip))
    for check in ("skew", "pinning", "glibc"):
        (only,) = _by(results, check)
        assert only.status is Status.SKIP and only.message == "skipped by --skip"
    assert not [r for r in results if r.check.startswith("skew.")]
    assert not [r for r in results if r.check.startswith("pinning.")]
    assert not any(t.title.startswith("version skew") for t in tables)
    # what is not skipped still runs: membership, and the node checks on every worker
    assert _by(results, "workers")[0].status is Status.PASS
    assert _by(results, "host-limits")
    unskipped, tables = judge(c, Expectations(), node_checks(False))
    assert any(t.title.startswith("version skew") for t in tables)
    assert _by(unskipped, "pinning") and not _by(unskipped, "glibc")[0].message.startswith(
        "skipped")


# --- the catalog: ids, --list-checks, --skip -------------------------------------------------


def _doc(fn) -> str:
    doc = (fn.__doc__ or "").strip()
    return " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())


def _registries() -> list[tuple[str, str, str]]:
    from envcheck.verify.job.checks import JOB_CHECKS
    from envcheck.verify.ray.checks import RAY_CHECKS

    return [
        *((i, "node", _doc(fn)) for i, fn in BUILTIN_CHECKS.items()),
        *((i, "cluster", _doc(fn)) for i, fn in CLUSTER_CHECKS.items()),
        *((f"smoke.{t.id}", "smoke", t.summary) for t in SMOKE_TESTS.values()),
        *((i, "job", _doc(fn)) for i, fn in JOB_CHECKS.items()),
        *((i, "ray", _doc(fn)) for i, fn in RAY_CHECKS.items()),
    ]


def test_the_catalog_table_is_every_registry_in_order_with_its_descriptions():
    # a check added to a registry and not to the table (or the other way) fails here
    table = [(c.id, c.kind, c.summary) for c in catalog.CATALOG]
    assert table == _registries()
    ids = [c.id for c in catalog.CATALOG]
    assert len(ids) == len(set(ids))


def test_the_id_a_smoke_test_reports_is_its_catalog_id():
    from envcheck.verify.smoke.run import result

    for test in SMOKE_TESTS.values():
        assert result(test.id, Status.PASS, "").check in {c.id for c in catalog.CATALOG}


@pytest.mark.parametrize("verb", ["node", "cluster", "job", "ray"])
def test_list_checks_names_the_checks_of_the_verb_with_kind_and_description(verb, capsys):
    assert main(["verify", verb, "--list-checks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "KIND", "DESCRIPTION"]
    rows = {line.split()[0]: line.split(None, 2) for line in lines[1:]}
    want = {c.id: c for c in catalog.CATALOG if verb in c.verbs}
    assert set(want) <= set(rows)
    for check_id, info in want.items():
        assert rows[check_id][1] == info.kind and rows[check_id][2] == info.summary, check_id
    assert rows["driver"][2].startswith("NVIDIA driver present")
    if verb == "cluster":
        assert rows["smoke.resources"][2].startswith("tasks annotated with a worker resource")
    else:
        assert "smoke.submit" not in rows and "pinning" not in rows


def test_list_checks_is_a_report_its_json_carries_the_table(tmp_path, capsys):
    out = tmp_path / "checks.json"
    assert main(["verify", "ray", "--list-checks", "--json", str(out)]) == 0
    (table,) = json.loads(out.read_text())["tables"]
    assert table["columns"] == ["ID", "KIND", "DESCRIPTION"]
    assert ["ray.nodes", "ray", catalog.CATALOG[[c.id for c in catalog.CATALOG].index(
        "ray.nodes")].summary] in table["rows"]
    assert "ray.nodes" in capsys.readouterr().out


def test_validate_skip_accepts_every_kind_and_refuses_unknown_ids_listing_the_valid_ones():
    assert catalog.validate_skip(["driver", "pinning", "smoke.submit", "job.kernel"]) == {
        "driver", "pinning", "smoke.submit", "job.kernel"}
    with pytest.raises(BadInput) as e:
        catalog.validate_skip(["driver", "no-such-check"])
    assert "unknown check id no-such-check" in e.value.message
    assert "driver" in e.value.message and "pinning" in e.value.message
    assert "smoke.torch-ddp" in e.value.message
    with pytest.raises(BadInput, match="unknown check id submit"):  # one id: the report's
        catalog.validate_skip(["submit"])
    assert names(["a,b", " c ", "a,,"]) == ("a", "b", "c")  # how --skip is read


@pytest.mark.parametrize("verb", ["node", "cluster"])
def test_unknown_skip_id_is_bad_input_before_anything_runs(verb, capsys):
    # verify cluster would start an embedded cluster: the id is refused before that
    assert main(["verify", verb, "--skip", "driver,nope"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown check id nope for --skip" in err
    assert "valid: driver" in err


def test_verify_node_skip_reports_each_skipped_check_once_and_runs_the_rest(tmp_path):
    out = tmp_path / "r.json"
    rc = main(["verify", "node", "--quiet", "--json", str(out),
               "--skip", "glibc,host-limits", "--skip", "pinning,smoke.submit"])
    report = json.loads(out.read_text())
    by = {}
    for r in report["results"]:
        by.setdefault(r["check"], []).append(r)
    assert rc in (0, 1, 2)
    for check in ("glibc", "host-limits"):
        (r,) = by[check]
        assert r["status"] == "skip" and r["message"] == "skipped by --skip"
    # a cluster check and a smoke test are valid ids here, but verify node runs neither
    assert "pinning" not in by and "submit" not in by and "smoke.submit" not in by
    assert by["libraries"] and by["ucx"]  # the others ran


def test_skipped_node_checks_are_not_called(monkeypatch):
    from envcheck.verify.node import checks as node_checks

    called = []

    def spy(facts, exp):
        called.append(1)
        return []

    monkeypatch.setitem(node_checks.BUILTIN_CHECKS, "glibc", spy)
    node_checks.run_node_checks(no_driver_node(), Expectations(), "n", plugins=False,
                                skip={"glibc"})
    assert not called
    node_checks.run_node_checks(no_driver_node(), Expectations(), "n", plugins=False)
    assert called == [1]


def test_docs_list_every_check_id():
    docs = Path(__file__).parents[2] / "docs"
    text = (docs / "verify-node.md").read_text() + (docs / "verify-cluster.md").read_text()
    for check_id in CLUSTER_CHECKS:
        assert f"`{check_id}`" in text, check_id
