"""envcheck runs on Python 3.8 (requires-python): an old RAPIDS env's client runs `verify
cluster` from inside it. Annotations are strings there (`from __future__ import annotations`),
but what runs at import or call time must be 3.8's: no subscripted builtin outside an
annotation (`Rows = list[tuple[str, ...]]` raises TypeError on import), no str.removeprefix /
removesuffix, no zip(strict=), no match statement. Every module under envcheck/ is read (AST),
and compiled by a real Python 3.8 where pyenv has one."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from tests.support.old_envs import find_python

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"list", "dict", "tuple", "set", "frozenset", "type"}
NEWER = {"removeprefix": "3.9", "removesuffix": "3.9"}


def _type_only(tree: ast.AST) -> set[int]:
    """ids of nodes never evaluated at run time: annotations, `if TYPE_CHECKING:` bodies."""
    out: set[int] = set()
    for node in ast.walk(tree):
        notes: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            args = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            notes += [x.annotation for x in args if x is not None and x.annotation is not None]
            notes += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            notes.append(node)
        out.update(id(m) for note in notes for m in ast.walk(note))
    return out


def newer_than_38(source: str) -> list[str]:
    """'line N: what' for each construct in `source` that Python 3.8 cannot run."""
    tree = ast.parse(source)
    skip = _type_only(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id in BUILTINS):
            found.append(f"line {node.lineno}: {ast.unparse(node)} (builtin generics: 3.9)")
        elif isinstance(node, ast.Attribute) and node.attr in NEWER:
            found.append(f"line {node.lineno}: .{node.attr} ({NEWER[node.attr]})")
        elif (isinstance(node, ast.Call) and ast.unparse(node.func) == "zip"
              and any(k.arg == "strict" for k in node.keywords)):
            found.append(f"line {node.lineno}: zip(strict=) (3.10)")
        elif type(node).__name__ == "Match":
            found.append(f"line {node.lineno}: match (3.10)")
    return found


def _modules() -> list[Path]:
    return sorted((ROOT / "envcheck").rglob("*.py"))


def test_every_module_runs_on_python_38() -> None:
    found = [f"{p.relative_to(ROOT)} {what}" for p in _modules()
             for what in newer_than_38(p.read_text())]
    assert found == []


def test_the_reader_catches_each_shape_and_passes_what_38_runs() -> None:
    caught = newer_than_38(
        "Rows = list[tuple[str, ...]]\n"
        "class L(list[int]): pass\n"
        "x = 'a'.removeprefix('b')\n"
        "y = list(zip([1], [2], strict=True))\n"
        "match x:\n    case _: pass\n")
    assert sorted({int(c.split()[1].rstrip(":")) for c in caught}) == [1, 2, 3, 4, 5], caught
    assert newer_than_38(
        "from __future__ import annotations\n"
        "from typing import List, Tuple\n"
        "Rows = List[Tuple[str, ...]]\n"
        "def f(x: list[int]) -> dict[str, int | None]: ...\n"
        "y: tuple[int, ...] = ()\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n    Alias = list[int]\n") == []


def test_every_module_compiles_under_python_38(tmp_path: Path) -> None:
    python = find_python("3.8")
    if python is None:
        pytest.skip("needs pyenv's Python 3.8 (CI has it)")
    done = subprocess.run(
        [python, "-c", "import sys, py_compile\n"
         "for p in sys.argv[2:]:\n    py_compile.compile(p, cfile=sys.argv[1], doraise=True)",
         str(tmp_path / "out.pyc"), *map(str, _modules())],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
