"""The documentation an installed user reads: every relative link in README.md and docs/
resolves (the file, and the heading an #anchor names); no message points at a docs/ path the
install lacks (they name `envcheck docs TOPIC`); the install text works today."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower-case, markup and punctuation dropped, spaces '-'."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if fenced or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _links(page: Path) -> list[tuple[int, str]]:
    found, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fenced ^= line.startswith("```")
        if not fenced:
            found += [(number, m.group(1)) for m in LINK.finditer(line)]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for number, target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(f"{page.relative_to(ROOT)}:{number}: {target} (no such file)")
        elif anchor and goal.suffix == ".md" and anchor not in _anchors(goal):
            broken.append(f"{page.relative_to(ROOT)}:{number}: {target} (no such heading)")
    assert broken == []


def _message_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                body[0].value, ast.Constant):
            docstrings.add(id(body[0].value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_no_message_points_at_a_docs_path_an_install_lacks() -> None:
    """Help, errors, fixes and generated scripts name `envcheck docs TOPIC`."""
    pointing = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
        for path in sorted((ROOT / "envcheck").rglob("*.py"))
        if path.name != "shipped_docs.py"
        for line, text in _message_strings(path)
        if re.search(r"(?<![\w/.])docs/\S", text)
    ]
    assert pointing == []


def test_the_install_text_works_before_envcheck_is_on_pypi() -> None:
    """cluster-envcheck is not on PyPI yet: no page says to install it from there."""
    from_pypi = re.compile(r"pip install (-U )?['\"]?cluster-envcheck\b")
    said = [f"{page.relative_to(ROOT)}:{n}" for page in PAGES
            for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
            if from_pypi.search(line)]
    assert said == []
