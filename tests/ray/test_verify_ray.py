"""verify ray against real Ray clusters: a head and nodes in network namespaces as hosts, a node
from another venv, a node advertising GPUs this machine does not have, and the embedded default."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.ray.conftest import OTHER_NUMPY, RAY_ENV
from tests.support.deadlines import HANG
from tests.support.ports import free_port
from tests.support.report_schema import validated


def _report(proc: subprocess.CompletedProcess, path) -> dict:
    assert path.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return validated(path)


def _by_check(report: dict, check: str) -> list[dict]:
    return [r for r in report["results"] if r["check"] == check]


@pytest.mark.netns  # the head and nodes are network namespaces
def test_two_hosts_pass_and_a_missing_third_is_counted(ray_hosts, tmp_path):
    out = tmp_path / "r.json"
    p = ray_hosts.verify("--expect-nodes", "2", "--json", str(out), "--quiet")
    report = _report(p, out)
    assert p.returncode == 0, report["results"]
    (nodes,) = [t for t in report["tables"] if t["title"] == "Ray nodes"]
    assert sorted(row[0].split(" ")[0] for row in nodes["rows"]) == ["head", "nodeA"]
    (skew,) = _by_check(report, "ray.skew")
    assert skew["status"] == "pass"
    assert _by_check(report, "ray.facts")[0]["message"] == "facts from 2 node(s)"

    out3 = tmp_path / "r3.json"
    p = ray_hosts.verify("--expect-nodes", "3", "--json", str(out3), "--quiet")
    report = _report(p, out3)
    assert p.returncode == 2
    (short,) = [r for r in _by_check(report, "ray.nodes") if r["status"] == "fail"]
    assert short["message"] == "2 alive node(s), 3 expected: 1 node never joined"


@pytest.mark.netns
def test_a_drifted_node_advertising_gpus_it_lacks_is_named(ray_hosts, ray_other_numpy_env,
                                                           tmp_path):
    ray_hosts.start_node("nodeB", python=str(ray_other_numpy_env.prefix / "bin" / "python"),
                         gpus=2)
    ray_hosts.wait_nodes(3)
    out = tmp_path / "r.json"
    p = ray_hosts.verify("--expect-nodes", "3", "--json", str(out), "--quiet")
    report = _report(p, out)
    assert p.returncode == 2, report["results"]
    skew = [r for r in _by_check(report, "ray.skew.numpy") if r["status"] == "fail"]
    assert skew and skew[0]["node"].startswith("nodeB ("), report["results"]
    assert OTHER_NUMPY in skew[0]["message"]
    (gpus,) = [r for r in _by_check(report, "ray.gpus") if r["status"] == "fail"]
    assert gpus["node"].startswith("nodeB (")
    assert "advertises 2 GPU(s) to Ray, its driver lists 0" in gpus["message"]
    # Ray gave each num_gpus=1 task a GPU index ("0", "1"); neither sees a GPU there
    tasks = [r for r in _by_check(report, "ray.gpu-tasks") if r["status"] == "fail"]
    assert len(tasks) == 2 and all(r["node"].startswith("nodeB (") for r in tasks)
    assert {t["message"].split("Ray gave it GPU ")[1][0] for t in tasks} == {"0", "1"}
    assert not [r for r in report["results"] if r["status"] == "fail"
                and r["node"].startswith(("head", "nodeA"))]


def test_embedded_default_starts_a_local_cluster_passes_and_leaves_nothing(tmp_path):
    out = tmp_path / "r.json"
    # --timeout bounds each step: Ray Train's first start takes ~30 s on a quiet 2-core VM and
    # 140-180 s beside two other test processes (seen in CI)
    p = subprocess.run([sys.executable, "-m", "envcheck", "verify", "ray", "--train",
                        "--timeout", "360", "--json", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=900,
                       env={**os.environ, **RAY_ENV})
    report = _report(p, out)
    assert p.returncode == 0, report["results"]
    (train,) = _by_check(report, "ray.train")
    assert train["status"] == "pass" and "gloo all-reduce over 2 worker(s) = 3 in" in (
        train["message"])
    assert report["environment"]["address"] == "local (started)"


def test_no_address_goes_to_ray_address_and_a_dead_one_ends_in_time(tmp_path):
    """With no address verify ray checks the cluster RAY_ADDRESS names, as Ray's own tools do
    (a job's driver has it set); one that is not up is unreachable within --timeout, in one line."""
    out = tmp_path / "r.json"
    address = f"127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "envcheck", "verify", "ray", "--timeout", "5",
                        "--json", str(out)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **RAY_ENV, "RAY_ADDRESS": address})
    assert time.monotonic() - t0 < 60
    assert p.returncode == 7, p.stdout + p.stderr
    assert f"no Ray cluster at {address}" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_nothing_listening_is_unreachable_and_a_bad_address_is_bad_input(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "envcheck", "verify", "ray", f"127.0.0.1:{port}",
                        "--timeout", "5"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 7, p.stderr
    assert p.stderr.count("\n") == 1 and "no Ray cluster at 127.0.0.1" in p.stderr
    assert time.monotonic() - t0 < HANG  # --timeout held: its 60 s default would not
    for bad in ("http://x:1", "host", "host:0", "a b:12"):
        p = subprocess.run([sys.executable, "-m", "envcheck", "verify", "ray", bad],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 4 and "not a Ray address" in p.stderr, (bad, p.stderr)
