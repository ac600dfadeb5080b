"""The smoke tests' client imports: each module once, in order, in one thread
(smoke/client_imports.py)."""

from __future__ import annotations

import threading

from envcheck.verify.smoke.client_imports import ClientImports, import_error


def test_each_module_is_imported_once_in_order_in_one_thread():
    calls: list[tuple[str, int]] = []

    def why_not(module: str) -> str:
        calls.append((module, threading.get_ident()))
        return "no such thing" if module == "b" else ""

    with ClientImports(["a", "b", "a", "c"], why_not) as imports:
        assert imports.error("b") == "no such thing"
        assert imports.error("a") == "" and imports.error("c") == ""
    assert [m for m, _ in calls] == ["a", "b", "c"]
    assert len({t for _, t in calls}) == 1 and calls[0][1] != threading.get_ident()


def test_a_module_not_asked_for_up_front_is_imported_when_asked():
    with ClientImports([]) as imports:
        assert imports.error("json") == ""
        assert "_envcheck_no_such_module" in imports.error("_envcheck_no_such_module")


def test_the_reason_is_the_imports_own_first_line():
    assert import_error("json") == ""
    assert import_error("_envcheck_no_such_module") == (
        "ModuleNotFoundError: No module named '_envcheck_no_such_module'")


def test_a_module_not_asked_for_up_front_is_imported_in_the_same_thread():
    threads: list[int] = []

    def why_not(module: str) -> str:
        threads.append(threading.get_ident())
        return ""

    with ClientImports(["a"], why_not) as imports:
        assert imports.error("late") == "" and imports.error("a") == ""
    assert len(threads) == 2 and len(set(threads)) == 1 and threads[0] != threading.get_ident()
