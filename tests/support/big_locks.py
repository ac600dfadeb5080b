"""Big conda-lock files for the lock reader's tests and bench/lock_read.py.

Real records repeated under new names, in the layout of the lock they come from: the
writer's own (``locks/``, envcheck's metadata included) or conda-lock's older sorted-keys
layout (``tests/data``), so a big lock reads as a real one does, only longer.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITERS_LAYOUT = ROOT / "locks" / "pangeo-ml-2023.10.conda-lock.yml"
SORTED_LAYOUT = ROOT / "tests" / "data" / "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml"  # noqa: E501


def big_lock_text(packages: int, template: Path = WRITERS_LAYOUT, rename_all: bool = False) -> str:
    """``template``'s records repeated to ``packages`` records, renamed ``<name>-c<i>``.

    The first copy keeps its names unless ``rename_all``: a lock without numpy, dask, ...
    implies no import probes, so timing it times the lock alone.
    """
    text = template.read_text()
    head, _, body = text.partition("\npackage:\n")
    lines = body.split("\n")
    n = next(i for i, line in enumerate(lines) if not line.startswith(("- ", "  ")))
    tail = "\n".join(lines[n:])
    blocks: list[list[str]] = []
    for line in lines[:n]:
        if line.startswith("- "):
            blocks.append([])
        blocks[-1].append(line)
    out = []
    for i in range(packages):
        block = blocks[i % len(blocks)]
        keep = i < len(blocks) and not rename_all
        out += block if keep else [_renamed(line, i) for line in block]
    return head + "\npackage:\n" + "\n".join(out) + "\n" + tail


def _renamed(line: str, i: int) -> str:
    for indent in ("- ", "  "):
        if line.startswith(indent + "name: "):
            return f"{line}-c{i}"
        if line.startswith(indent + "url: "):
            base, _, file = line.rpartition("/")
            return f"{base}/c{i}-{file}"
    return line
