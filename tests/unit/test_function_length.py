"""No function in the package is longer than a screen: 80 lines, its signature included."""

from __future__ import annotations

import ast
from pathlib import Path

import envcheck

LIMIT = 80
PACKAGE = Path(envcheck.__file__).parent


def test_no_function_in_the_package_is_over_80_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} "
                                f"{node.name} ({lines} lines)")  # fmt: skip
    assert not long, "over 80 lines:\n" + "\n".join(long)
