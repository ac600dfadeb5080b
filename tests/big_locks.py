"""Big conda-lock files for the lock reader's tests and bench/lock_read.py.

Real records repeated under new names, in the layout of the lock they come from: the
writer's own (``locks/``, envcheck's metadata included) or conda-lock's older sorted-keys
layout (``tests/data``), so a big lock reads as a real one does, only longer.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRITERS_LAYOUT = ROOT / "locks" / "pangeo-ml-2023.10.conda-lock.yml"
SORTED_LAYOUT = (
    ROOT / "tests" / "data" / "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml"
)


def big_lock_text(packages: int, template: Path = WRITERS_LAYOUT) -> str:
    """``template`` with its records repeated (renamed ``<name>-c<i>``) to ``packages`` records."""
    text = template.read_text()
    head, _, body = text.partition("\npackage:\n")
    end = body.find("\n", body.rfind("\n- "))  # records end at the first top-level key after
    while end >= 0 and body[end + 1 : end + 3] in ("- ", "  "):
        end = body.find("\n", end + 1)
    records, tail = (body, "") if end < 0 else (body[: end + 1], body[end + 1 :])
    blocks = ["- " + b for b in records.rstrip("\n").split("\n- ")]
    blocks[0] = blocks[0][2:]  # the first one kept its "- "
    out = []
    for i in range(packages):
        block = blocks[i % len(blocks)]
        if i >= len(blocks):
            lines = block.split("\n")
            lines = [_renamed(line, i) for line in lines]
            block = "\n".join(lines)
        out.append(block)
    return head + "\npackage:\n" + "\n".join(out) + "\n" + tail


def _renamed(line: str, i: int) -> str:
    for key in ("name: ", "url: "):
        for indent in ("- ", "  "):
            if line.startswith(indent + key):
                value = line[len(indent + key) :]
                if key == "name: ":
                    return f"{indent}{key}{value}-c{i}"
                stem, dot, ext = value.rpartition("/")[2].partition(".")
                return f"{indent}{key}{value.rpartition('/')[0]}/c{i}-{stem}{dot}{ext}"
    return line
