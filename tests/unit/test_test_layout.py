"""The suite's layout holds: every test module lives in a directory that gives its kind, and a
test under tests/unit that asks for a heavy fixture stops the collection naming both."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest

TESTS = Path(conftest.__file__).resolve().parent


def _item(where: str, fixtures: tuple[str, ...], params: dict | None = None, marks=()):
    """What the guard reads of a collected test: its file, id, fixtures, parameters, markers."""
    path = TESTS / where / "test_fake.py"
    return SimpleNamespace(
        fspath=path,
        nodeid=f"tests/{where}/test_fake.py::test_fake",
        fixturenames=list(fixtures),
        callspec=SimpleNamespace(params=params) if params is not None else None,
        get_closest_marker=lambda name: name if name in marks else None,
    )


@pytest.mark.parametrize("fixture", sorted(conftest.HEAVY_FIXTURES))
def test_a_unit_test_asking_for_a_heavy_fixture_is_refused_naming_both(fixture: str) -> None:
    why = conftest.unit_guard(_item("unit", ("tmp_path", fixture)))
    assert why.startswith("tests/unit/test_fake.py::test_fake is under tests/unit but uses ")
    assert f"uses {fixture}," in why


def test_the_collection_stops_with_a_usage_error_when_the_guard_fires() -> None:
    items = [_item("unit", ("local_cluster",)), _item("cluster", ("local_cluster",))]
    with pytest.raises(pytest.UsageError, match=r"test_fake.*uses local_cluster") as caught:
        conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert "tests/cluster" not in str(caught.value)  # the cluster test may use it


def test_a_unit_test_marked_with_another_kind_is_refused() -> None:
    why = conftest.unit_guard(_item("unit", (), marks=("cluster",)))
    assert "is under tests/unit but marked cluster" in why


@pytest.mark.parametrize("where", ["cluster", "build", "install", "hosts", "ray", "slurm"])
def test_heavy_fixtures_are_allowed_outside_tests_unit(where: str) -> None:
    assert conftest.unit_guard(_item(where, ("local_cluster", "channel", "hosts"))) == ""


def test_a_parameter_named_like_a_heavy_fixture_is_a_value_not_the_fixture() -> None:
    item = _item("unit", ("text", "hosts"), params={"text": "a[1-2]", "hosts": ["a1", "a2"]})
    assert conftest.unit_guard(item) == ""


def test_every_test_module_lives_in_a_kind_directory() -> None:
    outside = [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("test_*.py")
        if "data" not in p.relative_to(TESTS).parts
        and conftest.kind_dir(p) is None
    ]
    assert outside == [], f"test modules outside {sorted(conftest.KIND_OF_DIR)}: {outside}"


def test_every_directory_of_tests_is_a_kind_or_support() -> None:
    dirs = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert dirs - {"data", "support"} == set(conftest.KIND_OF_DIR)


def test_the_support_directory_holds_no_tests() -> None:
    assert sorted(p.name for p in (TESTS / "support").glob("test*.py")) == []


def test_a_test_takes_its_kind_from_its_directory() -> None:
    assert conftest._kinds(_item("build", ())) == {"solve"}
    assert conftest._kinds(_item("images", ())) == {"image", "install"}
    assert conftest._kinds(_item("unit", ())) == {"unit"}
    assert conftest._kinds(_item("unit", (), marks=("slow",))) == set()  # left to the full suite
    assert conftest._kinds(_item("cluster", (), marks=("oldenv",))) == {"cluster", "oldenv"}


@pytest.mark.parametrize(("markexpr", "where", "ignored"), [
    ("unit", "cluster", True), ("unit", "build", True), ("unit", "unit", None),
    ("unit", "support", None), ("", "cluster", None), ("unit and not slow", "cluster", None),
])
def test_minus_m_unit_alone_collects_only_tests_unit(markexpr: str, where: str, ignored) -> None:
    config = SimpleNamespace(option=SimpleNamespace(markexpr=markexpr))
    assert conftest.pytest_ignore_collect(TESTS / where, config) is ignored  # type: ignore[arg-type]
