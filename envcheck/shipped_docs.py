"""The documentation an installed envcheck carries: docs/ of the source tree, copied into the
package as envcheck/docs/ when the wheel is built (setup.py). ``envcheck docs TOPIC`` prints a
page; messages point at ``envcheck docs TOPIC`` rather than at a file the user may not have.
Python 3.8: the verify side's messages name topics too.
"""

from __future__ import annotations

from pathlib import Path

from envcheck.errors import BadInput

MAX_PAGE_BYTES = 1 << 20


def docs_root() -> Path | None:
    """envcheck/docs in a built install, else the checkout's docs/ beside the package."""
    package = Path(__file__).resolve().parent
    for root in (package / "docs", package.parent / "docs"):
        if (root / "exit-codes.md").is_file():
            return root
    return None


def topics(root: Path) -> dict[str, Path]:
    """topic -> page: each docs/*.md by its stem; a folder by its README.md ('expect'), and
    each other file in a folder by its path ('expect/a100x8.yaml')."""
    found: dict[str, Path] = {}
    for page in sorted(root.glob("*.md")):
        found[page.stem] = page
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if (folder / "README.md").is_file():
            found[folder.name] = folder / "README.md"
        for item in sorted(folder.iterdir()):
            if item.is_file() and item.name != "README.md":
                found[f"{folder.name}/{item.name}"] = item
    return found


def title(page: Path) -> str:
    """A page's first heading, without its '#' and backquotes."""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and not line.startswith("#!"):
            return line.lstrip("#").strip().replace("`", "")
    return ""


def index(root: Path) -> str:
    """``envcheck docs`` alone: every topic with its title."""
    found = topics(root)
    width = max(len(t) for t in found)
    lines = ["envcheck docs TOPIC prints a page; the topics:"]
    lines += [f"  {t:<{width}}  {title(p) if p.suffix == '.md' else 'example'}"
              for t, p in found.items()]
    return "\n".join(lines) + "\n"


def page_text(topic: str) -> str:
    """The page of ``topic`` ('exit-codes', 'exit-codes.md', 'docs/build.md' all name one)."""
    from envcheck.inputs import read_text

    root = docs_root()
    if root is None:
        raise BadInput("this install carries no documentation (envcheck/docs is missing): "
                       "reinstall from the wheel or the source tree")
    if not topic:
        return index(root)
    key = topic.strip().rstrip("/")
    key = key[len("docs/"):] if key.startswith("docs/") else key
    found = topics(root)
    key = key if key in found else key[:-3] if key.endswith(".md") else key
    if key not in found:
        raise BadInput(f"no documentation topic {topic!r}; the topics: {', '.join(found)}")
    return read_text(found[key], f"documentation page {key}", MAX_PAGE_BYTES)
