"""envcheck inside, and against, the environments it is for: RAPIDS 22.08's Python 3.9 and dask
2022.7.1 up to today's. Real venvs (tests/support/old_envs.py), real schedulers and workers started
from them, envcheck installed into them as a user would and run from inside."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from envcheck.verify.shipping import standalone_source
from tests.support.deadlines import HANG
from tests.support.old_envs import (
    OLD_ENVS,
    OTHER_CLOUDPICKLE,
    PROTECTED,
    EnvSpec,
    build_env,
    installed,
)
from tests.support.subprocess_cluster import (
    DASK_TIMEOUTS_PAST_HANG,
    ROOT,
    run_envcheck,
    start_cluster,
)

pytestmark = [pytest.mark.slow, pytest.mark.oldenv]  # venvs of pyenv's Python 3.8 and 3.9

OLDEST = OLD_ENVS[0]  # RAPIDS 22.08: Python 3.9, dask == distributed == 2022.7.1
CLEAN_STDERR_MARKERS = ("Traceback", "Exception ignored", "Error in atexit")


def _envcheck_in(python: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """`python -m envcheck ...` with that environment's interpreter, outside the checkout (so
    only the installed envcheck can be imported)."""
    return subprocess.run(
        [python, "-m", "envcheck", *args],
        capture_output=True, text=True, timeout=timeout, cwd="/",
    )


def _problems(report: Path) -> str:
    if not report.exists():
        return "(no report written)"
    bad = [r for r in json.loads(report.read_text())["results"]
           if r["status"] in ("fail", "error", "warn")]
    return "\n".join(f"{r['status']} {r['check']} {r['node']}: {r['message']}" for r in bad)


def _results(report: Path) -> dict[str, list[dict]]:
    by_check: dict[str, list[dict]] = {}
    for r in json.loads(report.read_text())["results"]:
        by_check.setdefault(r["check"], []).append(r)
    return by_check


@pytest.mark.parametrize("spec", OLD_ENVS, ids=[s.name for s in OLD_ENVS])
def test_envcheck_installs_without_changing_the_stack_and_verifies_the_node(
    spec: EnvSpec, tmp_path: Path
) -> None:
    env = build_env(spec)
    assert "cluster-envcheck" in env.after, "envcheck (cluster-envcheck) did not install"
    for name in PROTECTED:
        assert env.after.get(name) == env.before.get(name), (
            f"installing envcheck changed {name}: {env.before.get(name)} -> {env.after.get(name)}"
        )
    removed = sorted(set(env.before) - set(env.after))
    assert not removed, f"installing envcheck removed {removed}"
    changed = sorted(n for n in env.before if env.after.get(n) != env.before[n])
    assert not changed, f"installing envcheck changed {changed}"
    # and verify node runs there, on that Python, judging that environment
    report = tmp_path / "node.json"
    proc = _envcheck_in(env.python, "verify", "node", "--import", "distributed",
                        "--json", str(report))
    assert proc.returncode in (ExitCode.OK, ExitCode.WARN), _problems(report) + proc.stderr
    data = json.loads(report.read_text())
    assert data["environment"]["python"].startswith(spec.python + ".")
    (imports,) = [r for r in data["results"] if r["check"] == "imports"]
    assert imports["status"] == "pass"


@pytest.mark.parametrize("spec", OLD_ENVS, ids=[s.name for s in OLD_ENVS])
def test_verify_cluster_from_inside_passes_and_catches_a_skewed_worker(
    spec: EnvSpec, tmp_path: Path
) -> None:
    env = build_env(spec)
    odd = build_env(spec, with_envcheck=False, extra=(f"cloudpickle=={OTHER_CLOUDPICKLE}",))
    cluster = start_cluster(tmp_path / "cluster", python=env.python)
    try:
        cluster.add_worker("a", python=env.python)
        cluster.add_worker("b", python=env.python)
        cluster.wait_for_workers(["a", "b"])
        report = tmp_path / "ok.json"
        proc = _envcheck_in(
            env.python, "verify", "cluster", cluster.address, "--smoke", "submit,array",
            "--timeout", "30", "--json", str(report),
        )
        assert proc.returncode == ExitCode.OK, _problems(report) + proc.stderr[-2000:]
        results = _results(report)
        assert [r["status"] for r in results["skew"]] == ["pass"]
        assert [r["status"] for r in results["workers"]] == ["pass"]
        assert [r["status"] for r in results["smoke.submit"]] == ["pass", "pass"]
        assert [r["status"] for r in results["smoke.array"]] == ["pass"]
        assert "pinning" in results or "gpus" in results  # node checks ran per worker
        environment = json.loads(report.read_text())["environment"]
        assert environment["client python"].startswith(spec.python + ".")
        assert not any(m in proc.stderr for m in CLEAN_STDERR_MARKERS), proc.stderr

        # A worker from a second env of the same age, with another cloudpickle.
        cluster.add_worker("odd", python=odd.python)
        addresses = cluster.wait_for_workers(["a", "b", "odd"])
        report = tmp_path / "skew.json"
        proc = _envcheck_in(
            env.python, "verify", "cluster", cluster.address, "--smoke", "none",
            "--timeout", "30", "--json", str(report),
        )
        assert proc.returncode == ExitCode.FAIL, _problems(report) + proc.stderr[-2000:]
        (skew,) = _results(report)["skew.cloudpickle"]
        assert skew["status"] == "fail"
        assert skew["node"] == addresses["odd"]
        assert OTHER_CLOUDPICKLE in skew["message"]
        assert env.before["cloudpickle"] in skew["message"]
    finally:
        cluster.stop()


def test_current_client_against_a_2022_cluster_is_skew_not_bad_input(tmp_path: Path) -> None:
    env = build_env(OLDEST)
    cluster = start_cluster(tmp_path / "cluster", python=env.python)
    try:
        cluster.add_worker("w", python=env.python)
        cluster.wait_for_workers(["w"])
        report = tmp_path / "r.json"
        timeout = 10
        proc, took = run_envcheck(
            "verify", "cluster", cluster.address, "--timeout", str(timeout), "--json", str(report),
            env=DASK_TIMEOUTS_PAST_HANG,
        )
        assert proc.returncode == ExitCode.FAIL, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert took < HANG  # --timeout holds: distributed's own timeouts are 600 s here
        assert not any(m in proc.stderr for m in CLEAN_STDERR_MARKERS), proc.stderr
        import distributed

        results = _results(report)
        (handshake,) = results["skew.handshake"]
        assert handshake["status"] == "fail"
        assert "2022.7.1" in handshake["message"]
        assert distributed.__version__ in handshake["message"]
        assert f"envcheck verify cluster {cluster.address}" in handshake["fix"]
        (dist,) = results["skew.distributed"]
        assert dist["status"] == "fail" and "2022.7.1" in dist["message"]
        # the worker's versions came through the scheduler too
        table = json.loads(report.read_text())["tables"][0]
        assert any("worker" in c for c in table["columns"])
        assert cluster.scheduler.poll() is None  # the cluster is unharmed
    finally:
        cluster.stop()


def test_verify_node_prefix_checks_an_env_without_envcheck(tmp_path: Path) -> None:
    odd = build_env(OLDEST, with_envcheck=False, extra=(f"cloudpickle=={OTHER_CLOUDPICKLE}",))
    report = tmp_path / "node.json"
    proc, _ = run_envcheck(
        "verify", "node", "--prefix", str(odd.prefix), "--import", "dask", "--import",
        "distributed", "--json", str(report),
    )
    assert proc.returncode in (ExitCode.OK, ExitCode.WARN), proc.stdout[-3000:] + proc.stderr
    data = json.loads(report.read_text())
    env = data["environment"]
    assert env["prefix"] == str(odd.prefix)
    assert env["prefix python"].startswith("3.9.")
    assert env["prefix dask"] == env["prefix distributed"] == "2022.7.1"
    assert str(odd.prefix) in env["python"]  # the env's own interpreter collected the facts
    (imports,) = [r for r in data["results"] if r["check"] == "imports"]
    assert imports["status"] == "pass" and "dask" in imports["message"]
    assert "envcheck" not in installed(odd.python)


def _conda_prefix(tmp_path: Path, lock: Path, skip: str = "") -> Path:
    """A conda-style prefix: a real interpreter (venv) plus conda-meta records written from
    the lock's conda packages, as conda or `envcheck install` would leave them."""
    import yaml

    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    meta = prefix / "conda-meta"
    meta.mkdir()
    for pkg in yaml.safe_load(lock.read_text())["package"]:
        if pkg["manager"] != "conda" or pkg["name"] == skip:
            continue
        fname = pkg["url"].rsplit("/", 1)[-1]
        stem = fname.rsplit(".tar.bz2", 1)[0].rsplit(".conda", 1)[0]
        record = {"name": pkg["name"], "version": pkg["version"], "url": pkg["url"],
                  "build": stem.rsplit("-", 1)[-1], "files": []}
        (meta / f"{stem}.json").write_text(json.dumps(record))
    return prefix


def test_verify_node_prefix_on_a_conda_prefix_compares_its_conda_meta_with_the_lock(
    tmp_path: Path,
) -> None:
    lock = ROOT / "tests" / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"
    prefix = _conda_prefix(tmp_path / "ok", lock)
    report = tmp_path / "ok.json"
    proc, _ = run_envcheck("verify", "node", "--prefix", str(prefix), "--lock", str(lock),
                           "--no-plugins", "--json", str(report))
    (packages,) = [r for r in json.loads(report.read_text())["results"]
                   if r["check"] == "packages"]
    assert packages["status"] == "pass", packages

    drifted = _conda_prefix(tmp_path / "drift", lock, skip="ucx")
    report = tmp_path / "drift.json"
    proc, _ = run_envcheck("verify", "node", "--prefix", str(drifted), "--lock", str(lock),
                           "--no-plugins", "--json", str(report))
    assert proc.returncode == ExitCode.FAIL, proc.stderr
    (packages,) = [r for r in json.loads(report.read_text())["results"]
                   if r["check"] == "packages"]
    assert packages["status"] == "fail" and "ucx" in packages["message"]


@pytest.mark.parametrize(
    "path, why",
    [("missing", "no such directory"), ("empty", "no Python interpreter")],
)
def test_verify_node_prefix_bad_input_is_one_line(tmp_path: Path, path: str, why: str) -> None:
    (tmp_path / "empty").mkdir()
    proc, _ = run_envcheck("verify", "node", "--prefix", str(tmp_path / path))
    assert proc.returncode == ExitCode.BAD_INPUT
    assert why in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_build_in_an_old_env_says_what_it_needs(tmp_path: Path) -> None:
    recipe = ROOT / "recipes" / "rapids-22.08-el7.yaml"
    old = build_env(OLDEST)
    proc = _envcheck_in(old.python, "build", str(recipe), "--out", str(tmp_path))
    assert proc.returncode == ExitCode.BAD_INPUT
    assert "needs Python >= 3.10" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    newer = build_env(OLD_ENVS[2])  # Python 3.10, no build extra
    proc = _envcheck_in(newer.python, "build", str(recipe), "--out", str(tmp_path))
    assert proc.returncode == ExitCode.BAD_INPUT
    assert "pip install 'cluster-envcheck[build]'" in proc.stderr  # the env's install: uv pip
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing written


CORE_HELP = (("build",), ("install",), ("image",), ("diff",), ("why",), ("recipe", "new"),
             ("verify", "node"), ("verify", "cluster"), ("verify", "job"), ("verify", "ray"),
             ("slurm", "script"))


def test_core_install_helps_every_verb_and_reads_locks(tmp_path: Path) -> None:
    """The core install alone (Python 3.10, no build extra): every verb's --help, and diff and
    why on a lock; only the solve (build, why --not) asks for the extra."""
    core = build_env(OLD_ENVS[2])
    for verb in CORE_HELP:
        proc = _envcheck_in(core.python, *verb, "--help")
        assert proc.returncode == 0, (verb, proc.stderr)
        assert proc.stdout.startswith(f"usage: envcheck {' '.join(verb)}"), proc.stdout[:200]
    lock = ROOT / "locks" / "pangeo-ml-2023.10.conda-lock.yml"
    proc = _envcheck_in(core.python, "why", "numpy", str(lock), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["status"] == "pass"
    other = ROOT / "locks" / "pangeo-pytorch-2023.05.conda-lock.yml"
    proc = _envcheck_in(core.python, "diff", str(lock), str(other), "--markdown")
    assert proc.returncode == 0 and "| numpy | changed |" in proc.stdout, proc.stderr
    recipe = ROOT / "recipes" / "pangeo-ml-2023.10.yaml"
    proc = _envcheck_in(core.python, "why", "--not", "numpy", str(recipe))
    assert proc.returncode == ExitCode.BAD_INPUT and "build extra" in proc.stderr


def test_shipped_facts_collector_runs_on_python_3_8(tmp_path: Path) -> None:
    """The collector workers and --prefix run by value (the facts package's sources, installed
    by the payload loader under a digest-named package), on the oldest Python."""
    from tests.support.old_envs import find_python

    python = find_python("3.8")
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    t0 = time.monotonic()
    proc = subprocess.run(
        [python, "-I", "-", '{"import_modules": ["json"]}'],  # as --prefix runs it
        input=standalone_source(), capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    assert facts["python"].startswith("3.8.")
    assert [(p["module"], p["ok"]) for p in facts["imports"]] == [("json", True)]
    assert time.monotonic() - t0 < 60
