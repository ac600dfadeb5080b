"""Shared test configuration: every test's kind, and what each kind needs, decided here once.

Kinds are markers (pyproject's [tool.pytest.ini_options] lists them): ``pytest -m unit`` is the
inner loop (no subprocess cluster, solve, install, image, Slurm or namespace), CI runs them all.
A kind comes from the test's directory, its module, or the fixtures it uses; a test of no other
kind and not ``slow`` is ``unit``. What a kind needs from the machine (root, podman, slurmd,
a GPU, pyenv's Pythons) is checked here, not in fixtures: without it the test is skipped saying
why, and with ``ENVCHECK_TESTS_REQUIRE_ALL=1`` (.ci/run sets it) it fails instead, so a CI
machine that lost a tool cannot turn a suite green by skipping. ``gpu`` always skips without a
GPU: CI has none.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest

KINDS = (
    "unit", "cluster", "solve", "install", "image", "slurm", "netns", "oldenv", "ray", "gpu",
)

# tests/<dir>/ -> kind
_BY_DIR = {"gpu": "gpu", "slurm": "slurm", "hosts": "netns", "ray": "ray"}
# module -> kinds of every test in it
_BY_MODULE: dict[str, tuple[str, ...]] = {
    "test_images": ("image", "install"),
    "test_install": ("install",),
    "test_old_envs": ("oldenv", "cluster"),
    "test_tensorflow": ("oldenv",),  # a cached venv of tensorflow-cpu
    "test_build_crash": ("solve",),
    "test_conflicts": ("solve",),
    "test_shipped_recipes": ("solve",),
    "test_solve": ("solve",),
    "test_build_cli": ("solve",),
    "test_faults_build": ("solve",),  # the solver child under real signals
    "test_verify_cluster_cli": ("cluster",),
    "test_connect_faults": ("cluster",),
    "test_tls": ("cluster",),
    "test_gather": ("cluster",),
    "test_smoke": ("cluster",),
}
# fixture -> kind, for modules that mix quick tests with heavier ones
_BY_FIXTURE = {
    "local_cluster": "cluster",
    "two_workers": "cluster",
    "tls_cluster": "cluster",
    "venv_without_envcheck": "cluster",
    "venv_with_other_msgpack": "cluster",
    "venv_distributed_only": "cluster",
    "channel": "solve",
    "world": "solve",
    "py39_world": "install",
    "py39_env": "install",
    "slurm": "slurm",
    "hosts": "netns",
    "ray_hosts": "netns",
    "ucx_env": "oldenv",
}


# tests of otherwise quick modules that take seconds (big locks, child interpreters, fuzzing)
_SLOW = {
    "test_lock_document_loader_reads_mutated_locks_as_yaml_does",
    "test_conda_lock_in_a_venv_fails_the_packages_check",
    "test_fast_path_reads_big_locks_as_yaml_does",
    "test_the_load_child_runs_with_torch_here_and_says_it_sees_no_cuda_device",
    "test_conda_lock_parser_and_render_cli_accept_the_lock",
    "test_diff_of_two_real_pangeo_locks_matches_an_independent_reading",
    "test_lock_modules_load_without_conda_locks_cli",
}


def _kinds(item: pytest.Item) -> set[str]:
    path = Path(str(item.fspath))
    kinds = set()
    if path.parent.name in _BY_DIR:
        kinds.add(_BY_DIR[path.parent.name])
    kinds.update(_BY_MODULE.get(path.stem, ()))
    kinds.update(_BY_FIXTURE[f] for f in getattr(item, "fixturenames", ()) if f in _BY_FIXTURE)
    kinds.update(k for k in KINDS if k != "unit" and item.get_closest_marker(k))
    if getattr(item, "originalname", item.name) in _SLOW:
        item.add_marker(pytest.mark.slow)
    if not kinds and not item.get_closest_marker("slow"):
        kinds.add("unit")
    return kinds


@functools.cache
def _gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


def _pyenv(minor: str) -> bool:
    root = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
    found = any(root.glob(f"{minor}.*/bin/python{minor}"))
    return found or shutil.which(f"python{minor}") is not None


def _tools(*names: str) -> str:
    missing = [n for n in names if shutil.which(n) is None]
    return f"needs {', '.join(missing)}" if missing else ""


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _root() -> str:
    return "" if os.geteuid() == 0 else "needs root"


# kind -> what the machine lacks for it ("" when nothing); each evaluated once per session
_NO_GPU = "needs an NVIDIA GPU (NVML found none); run on the device"
_NEEDS = {
    "gpu": lambda: "" if _gpu_count() > 0 else _NO_GPU,
    "image": lambda: _root() or _tools("debootstrap", "podman", "runc"),
    "install": lambda: "" if _pyenv("3.9") else "needs pyenv's Python 3.9",
    "slurm": lambda: _root() or _tools("slurmctld", "slurmd", "munged"),
    "netns": lambda: _root() or _tools("ip", "unshare"),
    "oldenv": lambda: "" if _pyenv("3.8") and _pyenv("3.9") else "needs pyenv's Python 3.8 and 3.9",
    "ray": lambda: "" if _importable("ray") else "needs Ray (pip install -e '.[test]')",
}


# kinds whose tests share one session-scoped world (a Slurm, namespaces as hosts, images, cached
# envs) -> the pytest-xdist group that holds them (``-n N --dist loadgroup``): each group goes
# whole to one worker, so every world is made once; the other tests spread over all workers.
# Image builds (podman, CPU-bound) share a group with the namespaced hosts, whose UCX and Ray
# peers give up on each other when starved of CPU.
_GROUPED = {"slurm": "slurm", "netns": "heavy", "image": "heavy", "oldenv": "oldenv",
            "install": "install"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    strict = os.environ.get("ENVCHECK_TESTS_REQUIRE_ALL") == "1"
    xdist = config.pluginmanager.hasplugin("xdist")
    lacking: dict[str, str] = {}
    for item in items:
        kinds = _kinds(item)
        for kind in sorted(kinds):
            item.add_marker(getattr(pytest.mark, kind))
        group = next((_GROUPED[k] for k in _GROUPED if k in kinds), None)
        if xdist and group:
            item.add_marker(pytest.mark.xdist_group(group))
        for kind in sorted(kinds & set(_NEEDS)):
            if kind not in lacking:
                lacking[kind] = _NEEDS[kind]()
            why = lacking[kind]
            if not why:
                continue
            if strict and kind != "gpu":
                item.add_marker(pytest.mark.envcheck_lacking(f"{kind} tests: {why}"))
            else:
                item.add_marker(pytest.mark.skip(reason=f"{kind} tests: {why}"))
            break


def pytest_runtest_setup(item: pytest.Item) -> None:
    lacking = item.get_closest_marker("envcheck_lacking")
    if lacking is not None:
        pytest.fail(f"{lacking.args[0]} (ENVCHECK_TESTS_REQUIRE_ALL=1)", pytrace=False)


# --- verify cluster: worker environments without envcheck (session-scoped, made once) ---------

OTHER_MSGPACK = "1.1.0"  # wire-compatible with msgpack 1.2 but a different version


@pytest.fixture(scope="session")
def venv_without_envcheck(tmp_path_factory: pytest.TempPathFactory) -> str:
    """python of a venv that sees this environment's packages but cannot import envcheck."""
    from tests.support.subprocess_cluster import linked_venv

    return linked_venv(tmp_path_factory.mktemp("venvs") / "same")


@pytest.fixture(scope="session")
def venv_with_other_msgpack(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Like venv_without_envcheck, but msgpack OTHER_MSGPACK shadows ours."""
    from tests.support.subprocess_cluster import linked_venv

    return linked_venv(
        tmp_path_factory.mktemp("venvs") / "odd", own_packages=(f"msgpack=={OTHER_MSGPACK}",)
    )


@pytest.fixture(scope="session")
def venv_distributed_only(tmp_path_factory: pytest.TempPathFactory) -> str:
    """python of a separate venv holding only our distributed version and its dependencies."""
    import importlib.metadata

    from tests.support.subprocess_cluster import standalone_venv

    pin = f"distributed=={importlib.metadata.version('distributed')}"
    return standalone_venv(tmp_path_factory.mktemp("venvs") / "bare", (pin,))


# --- envcheck install and the images: a served channel of real packages, one installed env ----

from tests.support.install_world import py39_env, py39_world  # noqa: E402, F401

# --- every JSON report written in this test session validates against the schema -------------


@pytest.fixture(scope="session", autouse=True)
def _json_reports_follow_the_schema():
    """Wraps ``envcheck.report.write_json`` (the one JSON writer: cli, --nagios, the API all
    call it by module attribute): each file written in-process is validated right after it
    is written, and a report that breaks envcheck/report.schema.json fails its test there.
    Subprocess runs are validated by the tests that read them (tests.support.report_schema)."""
    import envcheck.report as report
    from tests.support.report_schema import validated

    original = report.write_json

    def write_and_validate(rep, path):  # noqa: ANN001, ANN202
        original(rep, path)
        validated(path)

    report.write_json = write_and_validate
    yield
    report.write_json = original
