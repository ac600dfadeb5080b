"""Any lock file (conda-lock v1 or pixi.lock) read through py-rattler as a dependency graph."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.inputs import check_regular
from envcheck.lockfile.read import MAX_LOCK_BYTES

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+")


@dataclass(frozen=True)
class Node:
    name: str
    version: str
    build: str  # "" for pip packages
    manager: str  # conda / pypi
    depends: tuple[str, ...]  # names of what it requires
    requires: tuple[str, ...] = ()  # the specs as the lock records them

    def label(self) -> str:
        return f"{self.name} {self.version}" + (f" {self.build}" if self.build else "")


@dataclass(frozen=True)
class LockGraph:
    path: Path
    environment: str
    platforms: dict[str, dict[str, Node]]  # platform -> name -> node
    sources: tuple[str, ...] = ()  # the recipe file(s) an envcheck/conda-lock lock names


def _dep_name(spec: str) -> str:
    m = _NAME.match(spec.strip())
    return m.group(0).lower() if m else spec


def _sources(path: Path) -> tuple[str, ...]:
    """conda-lock's metadata.sources (the recipe file names), from the file's head."""
    out: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        lines = [f.readline() for _ in range(60)]
    for i, line in enumerate(lines):
        if line.strip() == "sources:":
            for nxt in lines[i + 1 :]:
                if not nxt.lstrip().startswith("- "):
                    break
                out.append(nxt.strip()[2:].strip())
    return tuple(out)


def read_graph(path: Path, environment: str | None = None) -> LockGraph:
    """The packages of one environment of a lock, per platform; BadInput when unreadable."""
    from rattler import LockFile

    path = Path(path)
    check_regular(path, "lock", MAX_LOCK_BYTES)  # rattler reads it itself: no FIFO, no /dev/zero
    try:
        lf = LockFile.from_path(path)
    except Exception as e:  # noqa: BLE001 - rattler raises its own types for bad files
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise BadInput(f"{path} is not a lock file py-rattler reads: {first}") from None
    names = [n for n, _ in lf.environments()]
    env_name = environment or "default"
    env = lf.environment(env_name)
    if env is None:
        has = ", ".join(names) or "none"
        raise BadInput(f"{path} has no environment {env_name!r} (it has {has})")
    platforms: dict[str, dict[str, Node]] = {}
    for plat, pkgs in env.packages_by_platform().items():
        nodes: dict[str, Node] = {}
        for p in pkgs:
            rec = getattr(p, "package_record", None)
            if rec is not None:
                node = Node(
                    rec.name.normalized,
                    str(rec.version),
                    rec.build,
                    "conda",
                    tuple(_dep_name(d) for d in rec.depends),
                    tuple(rec.depends),
                )
            else:
                requires = getattr(p, "requires_dist", None) or ()
                name = p.name if isinstance(p.name, str) else p.name.normalized
                node = Node(
                    name.lower(),
                    str(p.version or ""),
                    "",
                    "pypi" if hasattr(p, "requires_dist") else "conda",
                    tuple(_dep_name(str(r)) for r in requires),
                    tuple(str(r) for r in requires),
                )
            nodes[node.name] = node
        platforms[plat.name] = nodes
    return LockGraph(path, env_name, platforms, _sources(path))
