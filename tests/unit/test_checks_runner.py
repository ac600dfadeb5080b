"""The runner (verify/runner.py) and run_node_checks through it: every check runs, results carry
the node, a skipped check is said once where it stands, a raising check is an error."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.node.checks import BUILTIN_CHECKS, run_node_checks
from envcheck.verify.runner import run_check, run_checks
from tests.support.factories import expect, healthy_a100x8, no_driver_node, with_process


def test_every_builtin_check_reports_on_the_named_node():
    results = run_node_checks(healthy_a100x8(), expect(), node="gpu-node-1", plugins=False)
    assert {r.check for r in results} == set(BUILTIN_CHECKS)
    assert {r.node for r in results} == {"gpu-node-1"}
    assert {r.group for r in results} == {"node"}


def test_no_driver_and_no_expectations_has_no_failure():
    results = run_node_checks(no_driver_node(), expect(), node="cpu", plugins=False)
    assert not [r for r in results if r.status in (Status.FAIL, Status.ERROR, Status.WARN)]
    no_gpu = {r.message for r in results if r.message.startswith("no GPU")}
    assert len(no_gpu) == 1  # every GPU check skips with one message: the report says it once


def test_a_check_that_raises_becomes_an_error_naming_it_and_the_run_goes_on(monkeypatch):
    def explode(facts, exp):
        raise KeyError("gpus")

    monkeypatch.setitem(BUILTIN_CHECKS, "gpus", explode)
    facts = with_process(healthy_a100x8(), 3, pid=1, user="root", mib=10)
    results = run_node_checks(facts, expect(), node="n1", plugins=False)
    [err] = [r for r in results if r.check == "gpus"]
    assert err.status is Status.ERROR and "check gpus raised KeyError" in err.message
    assert err.node == "n1"
    assert any(r.check == "busy-gpus" and r.status is Status.FAIL for r in results)


def test_a_check_returning_the_wrong_type_is_an_error():
    [r] = run_check("odd", lambda f, e: "ok", healthy_a100x8(), expect(), "n", "node")
    assert r.status is Status.ERROR and "not a list of Result" in r.message


def test_results_keep_their_own_check_id():
    [r] = run_check(
        "x", lambda f, e: [Result("sub", Status.PASS, "m")], healthy_a100x8(), expect(), "n", "g"
    )
    assert (r.check, r.node, r.group) == ("sub", "n", "g")


def test_a_skipped_check_does_not_run_and_is_said_once_where_it_stands():
    ran = []

    def check(name):
        return lambda f, e: ran.append(name) or [Result(name, Status.PASS, "ok")]

    registry = {"a": check("a"), "b": check("b"), "c": check("c")}
    out = run_checks(registry, None, None, {"b"}, group="g", node="n1")
    assert ran == ["a", "c"]
    assert [(r.check, r.status, r.message, r.node, r.group) for r in out] == [
        ("a", Status.PASS, "ok", "n1", "g"),
        ("b", Status.SKIP, "skipped by --skip", "n1", "g"),
        ("c", Status.PASS, "ok", "n1", "g"),
    ]
    quiet = run_checks(registry, None, None, {"b"}, group="g", say_skipped=False)
    assert [r.check for r in quiet] == ["a", "c"]


def test_verify_node_says_each_skipped_node_check_once_on_its_node():
    results = run_node_checks(healthy_a100x8(), expect(), node="n1", plugins=False,
                              skip={"glibc"})
    [glibc] = [r for r in results if r.check == "glibc"]
    assert (glibc.status, glibc.node, glibc.group) == (Status.SKIP, "n1", "node")
    per_worker = run_node_checks(healthy_a100x8(), expect(), node="n1", plugins=False,
                                 skip={"glibc"}, say_skipped=False)
    assert not [r for r in per_worker if r.check == "glibc"]
