"""Shared test configuration: every test's kind, and what each kind needs, decided here once.

Kinds are markers (pyproject's [tool.pytest.ini_options] lists them) and a test's kind is the
directory it lives in (``KIND_OF_DIR``): ``pytest -m unit`` is the inner loop (tests/unit: no
subprocess cluster, solve, install, image, Slurm or namespace), CI runs them all. A test under
tests/unit marked ``slow`` is left out of the unit lane and runs with the full suite. A module may
add a kind by marker where its tests need more than their directory says (``oldenv``: pyenv's old
Pythons). A test under tests/unit that asks for a fixture of ``HEAVY_FIXTURES`` stops the collection
naming both, and ``-m unit`` alone collects tests/unit only. What a kind needs from the machine
(root, podman, slurmd, a GPU, pyenv's Pythons) is checked here, not in fixtures: without it the test
is skipped saying why, and with ``ENVCHECK_TESTS_REQUIRE_ALL=1`` (.ci/run sets it) it fails instead,
so a CI machine that lost a tool cannot turn a suite green by skipping. ``gpu`` always skips without
a GPU: CI has none.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest

KINDS = (
    "unit", "cluster", "solve", "install", "image", "slurm", "netns", "oldenv", "ray", "job", "gpu",
)

TESTS = Path(__file__).resolve().parent
# tests/<dir>/ -> the kinds of every test in it (tests/support holds harnesses, no tests)
KIND_OF_DIR: dict[str, tuple[str, ...]] = {
    "unit": ("unit",),
    "build": ("solve",),
    "install": ("install",),
    "cluster": ("cluster",),
    "job": ("job",),
    "ray": ("ray",),
    "slurm": ("slurm",),
    "images": ("image", "install"),  # the images install the session's served channel
    "hosts": ("netns",),
    "gpu": ("gpu",),
}
# fixtures that start a cluster, daemon, venv build, solve or install: never in a unit test
HEAVY_FIXTURES = frozenset({
    "local_cluster", "two_workers", "tls_cluster", "cuda_cluster",
    "venv_without_envcheck", "venv_with_other_msgpack", "venv_distributed_only",
    "channel", "world", "envcheck_lock", "py39_world", "py39_env", "two_locks", "many_lock",
    "images", "slurm", "hosts", "ray_hosts", "ray_other_numpy_env", "ucx_env", "hvd",
})


def kind_dir(path: Path) -> str | None:
    """The kind directory a test file lives in (tests/<dir>/...), None outside one."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in KIND_OF_DIR else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m unit`` alone collects tests/unit only: no other directory holds a unit test, and
    importing their modules (Dask, Ray, torch) would cost the inner loop seconds."""
    if config.option.markexpr != "unit":
        return None
    try:
        top = collection_path.resolve().relative_to(TESTS).parts[:1]
    except ValueError:
        return None
    return True if top and top[0] in KIND_OF_DIR and top[0] != "unit" else None


def heavy_fixtures(item: pytest.Item) -> list[str]:
    """The HEAVY_FIXTURES a test asks for; names given by @pytest.mark.parametrize are values."""
    callspec = getattr(item, "callspec", None)
    params = set(callspec.params) if callspec is not None else set()
    return sorted(f for f in getattr(item, "fixturenames", ()) if f in HEAVY_FIXTURES - params)


def unit_guard(item: pytest.Item) -> str:
    """Why a test under tests/unit may not run as a unit test ("" when it may): it asks for a
    heavy fixture, or a marker gives it another kind."""
    if kind_dir(Path(str(item.fspath))) != "unit":
        return ""
    heavy = heavy_fixtures(item)
    if heavy:
        return (f"{item.nodeid} is under tests/unit but uses {', '.join(heavy)}, which starts a "
                "cluster, daemon, solve or install: move it to the directory of its kind")
    other = [k for k in KINDS if k != "unit" and item.get_closest_marker(k)]
    if other:
        return (f"{item.nodeid} is under tests/unit but marked {', '.join(other)}: "
                "move it to the directory of its kind")
    return ""


def _kinds(item: pytest.Item) -> set[str]:
    where = kind_dir(Path(str(item.fspath)))
    kinds = set(KIND_OF_DIR.get(where, ()))
    kinds.update(k for k in KINDS if k != "unit" and item.get_closest_marker(k))
    if item.get_closest_marker("slow"):
        kinds.discard("unit")
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
    # needs by marker, not kinds: a tests/unit test may carry them (.ci/run installs both)
    "browser": lambda: _tools("chromium"),
    "zsh": lambda: _tools("zsh"),
}
NEED_MARKERS = ("browser", "zsh")


# kinds whose tests share one session-scoped world (a Slurm, namespaces as hosts, images, cached
# envs) -> the pytest-xdist group that holds them (``-n N --dist loadgroup``): each group goes
# whole to one worker, so every world is made once; the other tests spread over all workers.
# Image builds (podman, CPU-bound) share a group with the namespaced hosts, whose UCX and Ray
# peers give up on each other when starved of CPU.
_GROUPED = {"slurm": "slurm", "netns": "heavy", "image": "heavy", "oldenv": "oldenv",
            "install": "install"}
# kind -> the session fixture its group exists for: a test of that kind that does not use it
# (an install of a small channel of its own) spreads over all workers like the rest
_GROUPED_FOR = {"install": "py39_world"}


def _group(item: pytest.Item, kinds: set[str]) -> str | None:
    fixtures = getattr(item, "fixturenames", ())
    for kind, group in _GROUPED.items():
        if kind in kinds and _GROUPED_FOR.get(kind, "") in ("", *fixtures):
            return group
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = [why for why in map(unit_guard, items) if why]
    if misplaced:
        raise pytest.UsageError("\n".join(misplaced))
    strict = os.environ.get("ENVCHECK_TESTS_REQUIRE_ALL") == "1"
    xdist = config.pluginmanager.hasplugin("xdist")
    lacking: dict[str, str] = {}
    for item in items:
        kinds = _kinds(item)
        for kind in sorted(kinds):
            item.add_marker(getattr(pytest.mark, kind))
        group = _group(item, kinds)
        if xdist and group:
            item.add_marker(pytest.mark.xdist_group(group))
        needs = kinds | {m for m in NEED_MARKERS if item.get_closest_marker(m)}
        for kind in sorted(needs & set(_NEEDS)):
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


def missing_import(report: pytest.CollectReport | pytest.TestReport) -> str:
    """The reason of a skip that ``pytest.importorskip`` made ("" for any other report)."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return ""
    reason = str(report.longrepr[2])
    return reason if "could not import" in reason else ""


def _strict_imports(report: pytest.CollectReport | pytest.TestReport) -> None:
    """Under ENVCHECK_TESTS_REQUIRE_ALL=1 a module the test extra installs is never missing: a
    skip for a failed import fails, as a missing tool does."""
    reason = missing_import(report)
    if reason and os.environ.get("ENVCHECK_TESTS_REQUIRE_ALL") == "1":
        report.outcome = "failed"
        report.longrepr = f"{reason} (ENVCHECK_TESTS_REQUIRE_ALL=1: the test extra installs it)"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # noqa: ANN201 - a hook wrapper
    report = yield
    _strict_imports(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ANN201
    report = yield
    _strict_imports(report)
    return report


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
