"""No test asserts wall time: a bound on a clock difference is a hang deadline (>= HANG).

A test that asserts "took < 5" fails on a loaded or slow machine that never ran it. This walks
every module under tests/ and finds two shapes:

- an ``assert`` that bounds from above a value read off a clock (``time.monotonic()`` and
  friends, a name assigned from one, or a module function returning one) by anything but a
  number >= ``HANG`` (a literal, a module constant, or ``HANG`` itself);
- a test's own wait (``subprocess.run``, ``.communicate``, ``.wait``, ``.join``, ``.result``)
  given a literal ``timeout`` under ``HANG``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.deadlines import HANG

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = frozenset({"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns"})
WAITS = frozenset({"run", "check_output", "check_call", "communicate", "wait", "join", "result"})


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr in CLOCKS and isinstance(f.value, ast.Name) and f.value.id == "time"
    return isinstance(f, ast.Name) and f.id in {"monotonic", "perf_counter"}


def _called(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


class _Module:
    """One test module: its numeric constants and what is read off a clock in it.

    ``shared`` maps the functions of other modules (tests/support's runners) that return a
    clock reading to the index of that reading in the tuple they return (-1: the value itself).
    """

    def __init__(self, tree: ast.Module, shared: dict[str, int] | None = None) -> None:
        self.tree = tree
        self.shared = shared or {}
        self.constants: dict[str, float] = {"HANG": HANG}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                value = self._number(node.value)
                if value is not None:
                    self.constants[node.targets[0].id] = value
        self.clock_names: set[str] = set()
        self.clock_functions: set[str] = set()
        for _ in range(3):  # names feed functions feed names: a few rounds reach the fixpoint
            self._spread()

    def _number(self, node: ast.AST) -> float | None:
        try:
            expr = ast.Expression(body=node)
            names = {n: v for n, v in getattr(self, "constants", {}).items()}
            value = eval(compile(expr, "<bound>", "eval"), {"__builtins__": {}}, names)
        except Exception:
            return None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else None

    def clocked(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if _is_clock_call(sub):
                return True
            if isinstance(sub, ast.Name) and sub.id in self.clock_names:
                return True
            if isinstance(sub, ast.Call) and self.shared.get(_called(sub)) == -1:
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                    and sub.func.id in self.clock_functions:
                return True
        return False

    def _spread(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(r, ast.Return) and r.value is not None and self.clocked(r.value)
                for r in ast.walk(node)
            ):
                self.clock_functions.add(node.name)
            value = getattr(node, "value", None)
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self._mark(targets, value)

    def _mark(self, targets: list[ast.AST], value: ast.AST) -> None:
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                    and len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    if isinstance(t, ast.Name) and self.clocked(v):
                        self.clock_names.add(t.id)
            elif isinstance(target, ast.Tuple):
                if self._returns_clock_at(value) is not None:
                    index = self._returns_clock_at(value)
                    if index < len(target.elts) and isinstance(target.elts[index], ast.Name):
                        self.clock_names.add(target.elts[index].id)
            elif isinstance(target, ast.Name) and self.clocked(value):
                self.clock_names.add(target.id)

    def _returns_clock_at(self, value: ast.AST) -> int | None:
        """Which element of a called module function's returned tuple is read off a clock."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return self.shared.get(_called(value)) if isinstance(value, ast.Call) else None
        if value.func.id in self.shared:
            return self.shared[value.func.id]
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == value.func.id:
                for r in ast.walk(node):
                    if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple):
                        for i, elt in enumerate(r.value.elts):
                            if self.clocked(elt):
                                return i
        return None

    def exported(self) -> dict[str, int]:
        """This module's functions that return a clock reading, as ``shared`` takes them."""
        out = {}
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef):
                index = self._returns_clock_at(ast.Call(func=ast.Name(id=node.name), args=[],
                                                        keywords=[]))
                if index is not None:
                    out[node.name] = index
                elif node.name in self.clock_functions:
                    out[node.name] = -1
        return out

    def bound_ok(self, node: ast.AST) -> bool:
        value = self._number(node)
        return value is not None and value >= HANG


def _upper_bounds(test: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(measured, bound) pairs of every ``a < b`` / ``b > a`` chain link in an assert's test."""
    pairs = []
    for cmp in (n for n in ast.walk(test) if isinstance(n, ast.Compare)):
        left = cmp.left
        for op, right in zip(cmp.ops, cmp.comparators, strict=True):
            if isinstance(op, (ast.Lt, ast.LtE)):
                pairs.append((left, right))
            elif isinstance(op, (ast.Gt, ast.GtE)):
                pairs.append((right, left))
            left = right
    return pairs


def _shared() -> dict[str, int]:
    shared: dict[str, int] = {}
    for path in sorted(TESTS.rglob("*.py")):
        shared.update(_Module(ast.parse(path.read_text(), str(path))).exported())
    return shared


def _findings(path: Path, shared: dict[str, int]) -> list[str]:
    module = _Module(ast.parse(path.read_text(), str(path)), shared)
    where = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Assert):
            for measured, bound in _upper_bounds(node.test):
                if module.clocked(measured) and not module.clocked(bound) \
                        and not module.bound_ok(bound):
                    found.append(f"{where}:{node.lineno}: "
                                 f"asserts {ast.unparse(measured)} < {ast.unparse(bound)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            for kw in node.keywords:
                if name in WAITS and kw.arg == "timeout" and isinstance(kw.value, ast.Constant) \
                        and isinstance(kw.value.value, (int, float)) and kw.value.value < HANG:
                    found.append(f"{where}:{node.lineno}: "
                                 f"waits {name}(timeout={kw.value.value})")
    return found


def test_no_test_bounds_a_clock_difference_below_the_hang_deadline() -> None:
    shared = _shared()
    found = [f for path in sorted(TESTS.rglob("*.py")) for f in _findings(path, shared)]
    assert not found, f"bounds under HANG={HANG:g} s (use it, or assert what happened):\n" \
        + "\n".join(found)


CAUGHT = """
import time
BOUND = 5
def _run():
    t0 = time.monotonic()
    return "out", time.monotonic() - t0
def test_a():
    started = time.monotonic()
    assert time.monotonic() - started < 3
def test_b():
    out, took = _run()
    assert took < BOUND
def test_c(proc):
    proc.communicate(timeout=10)
def test_d():
    proc, took = run_envcheck("verify")
    assert took < 3 + 15
"""
PASSED = """
import time
from tests.support.deadlines import HANG
def test_a():
    started = time.monotonic()
    took = time.monotonic() - started
    assert took < HANG and took < 2 * HANG and took > 0.5
def test_b(proc, n):
    proc.communicate(timeout=HANG)
    assert n < 3
"""


@pytest.mark.parametrize(("source", "count"), [(CAUGHT, 4), (PASSED, 0)], ids=["caught", "passed"])
def test_the_walk_finds_each_shape_and_nothing_else(tmp_path: Path, source: str,
                                                    count: int) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(source)
    found = _findings(probe, {"run_envcheck": 1})
    assert len(found) == count, found
