"""Whether a worker has a package a smoke test or measurement needs, read from its facts.

Distributions name one import differently: ``xgboost-cpu`` and ``py-xgboost`` (conda) for
``xgboost``, ``cupy-cuda13x`` for ``cupy``, ``dask-cudf-cu12`` for ``dask-cudf``, ``pytorch``
(conda) for ``torch``. The facts hold conda-meta names and dist-info names; both are searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envcheck.lockfile.names import conda_names_of
from envcheck.verify.facts import NodeFacts

# Suffixes that wheel and conda builds add for CPU-only or per-CUDA variants.
_VARIANT = r"(-core|-cpu|-gpu|-cu\d+|-cuda\d+x?)?"


def _names(f: NodeFacts) -> Iterable[str]:
    yield from f.packages
    yield from getattr(f, "python_packages", {}) or {}


def package_version(f: NodeFacts, stem: str) -> str | None:
    """The version of the distribution that provides ``stem`` on this process, else None."""
    pattern = re.compile(rf"(py-)?{re.escape(stem)}{_VARIANT}")
    wanted = (stem, *conda_names_of(stem))  # pytorch for torch
    for table in (f.packages, getattr(f, "python_packages", {}) or {}):
        for name, version in table.items():
            if name in wanted or pattern.fullmatch(name):
                return version
    return None


def has_package(f: NodeFacts, stem: str) -> bool:
    return package_version(f, stem) is not None


def knows_packages(f: NodeFacts) -> bool:
    """False when the collector could not list packages; then absence proves nothing."""
    return any(True for _ in _names(f))


def lacks(f: NodeFacts, stems: tuple[str, ...]) -> bool:
    """True when the facts list packages and none of ``stems`` is among them."""
    return knows_packages(f) and not any(has_package(f, s) for s in stems)
