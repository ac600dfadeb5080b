"""Shared test configuration. GPU skips are decided here, once, from the `gpu` marker."""

from __future__ import annotations

import pytest


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (NVML found none); run on the device")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


# --- verify cluster: worker environments without envcheck (session-scoped, made once) ---------

OTHER_MSGPACK = "1.1.0"  # wire-compatible with msgpack 1.2 but a different version


@pytest.fixture(scope="session")
def venv_without_envcheck(tmp_path_factory: pytest.TempPathFactory) -> str:
    """python of a venv that sees this environment's packages but cannot import envcheck."""
    from tests.subprocess_cluster import linked_venv

    return linked_venv(tmp_path_factory.mktemp("venvs") / "same")


@pytest.fixture(scope="session")
def venv_with_other_msgpack(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Like venv_without_envcheck, but msgpack OTHER_MSGPACK shadows ours."""
    from tests.subprocess_cluster import linked_venv

    return linked_venv(
        tmp_path_factory.mktemp("venvs") / "odd", own_packages=(f"msgpack=={OTHER_MSGPACK}",)
    )


@pytest.fixture(scope="session")
def venv_distributed_only(tmp_path_factory: pytest.TempPathFactory) -> str:
    """python of a separate venv holding only our distributed version and its dependencies."""
    import importlib.metadata

    from tests.subprocess_cluster import standalone_venv

    pin = f"distributed=={importlib.metadata.version('distributed')}"
    return standalone_venv(tmp_path_factory.mktemp("venvs") / "bare", (pin,))


# --- envcheck install and the images: a served channel of real packages, one installed env ----

from tests.install_world import py39_env, py39_world  # noqa: E402, F401

# --- every JSON report written in this test session validates against the schema -------------


@pytest.fixture(scope="session", autouse=True)
def _json_reports_follow_the_schema():
    """Wraps ``envcheck.report.write_json`` (the one JSON writer: cli, --nagios, the API all
    call it by module attribute): each file written in-process is validated right after it
    is written, and a report that breaks envcheck/report.schema.json fails its test there.
    Subprocess runs are validated by the tests that read them (tests.report_schema)."""
    import envcheck.report as report
    from tests.report_schema import validated

    original = report.write_json

    def write_and_validate(rep, path):  # noqa: ANN001, ANN202
        original(rep, path)
        validated(path)

    report.write_json = write_and_validate
    yield
    report.write_json = original
