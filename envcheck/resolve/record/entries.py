"""A recipe's entries as the lint rules read them, and the package names the rules know."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from envcheck.resolve.record.table import Record

# ranges of the `rapids` meta-package's run requirements: a recipe outside them cannot install it
META_RANGES = ("numpy", "cupy", "numba", "nccl", "ucx")


# ranges versions.yaml holds for RAPIDS' other environments (notebooks, builds): advice only
ADVICE_RANGES = ("pandas", "pytorch", "ucx-py", "distributed-ucxx")


EXACT = ("dask", "distributed", "dask-expr")


TOOLKITS = ("cudatoolkit", "cuda-version")


@dataclass(frozen=True)
class Entry:
    text: str  # as written in the recipe
    name: str
    version: str | None  # the match spec's version part, as conda reads it; None = any
    build: str | None = None  # the build-string part (a glob), None = any


def parse_entries(specs: Iterable[str]) -> list[Entry]:
    from envcheck.resolve.spec import conda_spec

    out = []
    for s in specs:
        m = conda_spec(s)
        version = None if m.version in (None, "*") else m.version
        build = None if m.build in (None, "*") else m.build
        out.append(Entry(s, m.name.normalized, version, build))
    return out


_CU_SUFFIX = re.compile(r"^(.+)-cu(\d{2})$")


def pip_entries(requirements: Iterable[str], record: Record) -> list[str]:
    """RAPIDS wheels as the conda entries the rules read: 'cudf-cu12==26.10.*' says cudf
    26.10.* and CUDA 12 (the wheel's suffix is its CUDA major); dask-cuda keeps its name."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = record.release_versioned_names() | {"dask-cuda"}
    out: list[str] = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        m = _CU_SUFFIX.match(name)
        base = m.group(1) if m else name
        if base not in names and name not in EXACT and name != "python":
            continue
        spec = ",".join(
            s.version if s.operator == "==" and s.version.endswith(".*") else str(s)
            for s in req.specifier
        )
        out.append(f"{base} {spec}" if spec else base)
        if m and f"cuda-version {m.group(2)}.*" not in out:
            out.append(f"cuda-version {m.group(2)}.*")
    return out
