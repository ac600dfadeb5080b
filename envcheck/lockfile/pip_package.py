"""PipPackage: a wheel or sdist a lock pins, as the build side makes them. Apart from model.py
because it keeps @dataclass (its ``dependencies`` are left out of the hash): the readers and
install do not import dataclasses for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PipPackage:
    """A wheel or sdist chosen by the pip resolution, pinned by url and sha256."""

    name: str
    version: str
    url: str
    sha256: str
    dependencies: Mapping[str, str] = field(default_factory=dict, hash=False)
