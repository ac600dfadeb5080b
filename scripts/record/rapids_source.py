"""What the record generator's modules share: the data folder, a copied file read by line,
known/unknown values with their pointers, and the glibc RAPIDS states after CentOS 7."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "rapids-record"
UNKNOWN = "unknown"
PLATFORMS = "docs/main/_data/platform_support.yml"


class Source:
    """One copied file, read once, searched by line."""

    def __init__(self, data: Path, rel: str) -> None:
        self.rel = rel
        path = data / rel
        self.lines = path.read_text().splitlines() if path.exists() else []

    def exists(self) -> bool:
        return bool(self.lines)

    def find(self, pattern: str, start: int = 0) -> tuple[re.Match[str], str] | None:
        """First line (from ``start``) matching; returns the match and 'path:line'."""
        rx = re.compile(pattern)
        for i, line in enumerate(self.lines[start:], start + 1):
            m = rx.search(line)
            if m:
                return m, f"{self.rel}:{i}"
        return None

    def key_value(self, key: str) -> tuple[str, str] | None:
        """A versions.yaml entry ``key:`` followed by ``  - 'VALUE'``: (VALUE, pointer)."""
        head = self.find(rf"^{re.escape(key)}:\s*$")
        if head is None:
            return None
        line_no = int(head[1].rsplit(":", 1)[1])
        for i in range(line_no, len(self.lines)):
            m = re.match(r"^\s+-\s+['\"]?([^'\"#]*?)['\"]?\s*(#.*)?$", self.lines[i])
            if m:
                return m.group(1).strip(), f"{self.rel}:{i + 1}"
            if not self.lines[i].lstrip().startswith("#"):
                break
        return None


def known(value: Any, *pointers: str, note: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"value": value, "from": list(pointers)}
    if note:
        out["note"] = note
    return out


def unknown(note: str) -> dict[str, Any]:
    return {"value": UNKNOWN, "from": [], "note": note}


NOTICE_37 = "docs/main/_notices/rsn0037.md"
CONDA_GLIBC_AFTER = ("24.06", "24.08", "24.10", "24.12", "25.02")  # cudf c_stdlib_version


def glibc_after(data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(first release without CentOS 7, the glibc RAPIDS states from then on): support notice
    37 removes CentOS 7 (glibc 2.17) in 24.06; the docs' platform-support table gives
    glibc_min for each release it lists. Neither names a glibc for 24.06-25.04, and cudf's
    conda recipes build against glibc 2.17 through 24.12: the note says so, with the lines."""
    notice = Source(data, NOTICE_37)
    removed = notice.find(r"deprecating `CentOS 7` in release v[\d.]+, and it will be removed in "
                          r"release v(\d+\.\d+)")  # fmt: skip
    table = Source(data, PLATFORMS)
    mins = [(m[0].group(1), m[1]) for m in _all(table, r'^    glibc_min: "([\d.]+)"')]
    listed = [m[0].group(1) for m in _all(table, r'^  - version: "(\d+\.\d+)"')]
    if removed is None or not mins or len({v for v, _ in mins}) != 1:
        why = f"{NOTICE_37} or {PLATFORMS} does not say what it used to"
        return unknown(why), unknown(why)
    first = removed[0].group(1)
    conda = [
        (rel, kv)
        for rel in CONDA_GLIBC_AFTER
        if (kv := Source(data, f"cudf/{rel}/conda/recipes/cudf/conda_build_config.yaml")
            .key_value("c_stdlib_version"))
    ]  # fmt: skip
    old = [(rel, kv) for rel, kv in conda if kv[0] != mins[0][0]]
    note = (
        f"RAPIDS support notice 37 removes CentOS 7 (glibc 2.17) in {first}; RAPIDS docs give "
        f"glibc_min {mins[0][0]} for {min(listed)}-{max(listed)}; no copied file names a glibc "
        f"for the releases between"
    )
    if old:
        note += (
            f" (cudf's conda recipes build against glibc {old[-1][1][0]} through {old[-1][0]}: "
            f"{old[-1][1][1]})"
        )
    return (
        known(first, removed[1], note="RAPIDS support notice 37: CentOS 7 removed"),
        known(mins[0][0], removed[1], *[p for _, p in mins], note=note),
    )


def _all(src: Source, pattern: str) -> list[tuple[re.Match[str], str]]:
    rx = re.compile(pattern)
    return [(m, f"{src.rel}:{i}") for i, line in enumerate(src.lines, 1) if (m := rx.search(line))]
