"""Which optional parts this interpreter can run: the build side needs Python >= 3.10 and the
`build` extra (solver, conda-lock's models, uv); the verify side needs only the core."""

from __future__ import annotations

import importlib.util
import sys

from envcheck.distribution import extra_hint
from envcheck.errors import BadInput

BUILD_MODULES = ("rattler", "conda_lock", "uv")


def require_build_extra(verb: str) -> None:
    """BadInput (one line) when this interpreter cannot run a build-side verb."""
    if sys.version_info < (3, 10):
        raise BadInput(
            f"envcheck {verb} needs Python >= 3.10 (this is {sys.version.split()[0]}); "
            "verify runs here, build on a newer Python"
        )
    missing = [m for m in BUILD_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise BadInput(
            f"envcheck {verb} needs the build extra (missing: {', '.join(missing)}): "
            f"{extra_hint('build')}"
        )
