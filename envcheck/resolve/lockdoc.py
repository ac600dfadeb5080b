"""A solve's result as a conda-lock v2 Lockfile model: what ``envcheck build`` writes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from envcheck.lockfile.condalock import conda_lock_ready
from envcheck.lockfile.model import META
from envcheck.lockfile.pip_package import PipPackage
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import SolvedPackage, resolve_channel


def _split_dep(dep: str) -> tuple[str, str]:
    """'python >=3.8' -> ('python', '>=3.8'); conda-lock keeps dependencies as name -> spec."""
    name, _, rest = dep.strip().partition(" ")
    return name, rest.strip() or "*"


def _conda_dependency(p: SolvedPackage, platform: str) -> Any:
    conda_lock_ready()
    from conda_lock.lockfile.v2prelim.models import HashModel, LockedDependency

    deps: dict[str, str] = {}
    for d in p.depends:
        name, spec = _split_dep(d)
        deps[name] = f"{deps[name]},{spec}" if name in deps else spec
    return LockedDependency(
        name=p.name,
        version=p.version,
        manager="conda",
        platform=platform,
        dependencies=deps,
        url=p.url,
        hash=HashModel(md5=p.md5, sha256=p.sha256),
        build=p.build,
        categories={"main"},
    )


def _pip_dependency(p: PipPackage, platform: str) -> Any:
    conda_lock_ready()
    from conda_lock.lockfile.v2prelim.models import HashModel, LockedDependency

    return LockedDependency(
        name=p.name,
        version=p.version,
        manager="pip",
        platform=platform,
        dependencies=dict(p.dependencies),
        url=p.url,
        hash=HashModel(sha256=p.sha256),
        categories={"main"},
    )


def build_lockfile(
    recipe: Recipe,
    solved: Mapping[str, Sequence[SolvedPackage]],
    pip: Mapping[str, Sequence[PipPackage]],
    virtual_packages: Mapping[str, Mapping[str, str]],
    channel_data: Sequence[str],
    extra_metadata: Mapping[str, str] | None = None,
) -> Any:
    """A conda-lock v2 Lockfile model for ``recipe``; solved/pip/virtual_packages by platform."""
    conda_lock_ready()
    from conda_lock.lockfile.v2prelim.models import Lockfile, LockMeta
    from conda_lock.models.channel import Channel

    packages = [_conda_dependency(p, plat) for plat, ps in solved.items() for p in ps]
    packages += [_pip_dependency(p, plat) for plat, ps in pip.items() for p in ps]
    h = recipe.content_hash()
    custom = {
        f"{META}recipe": recipe.name,
        f"{META}recipe_hash": h,
        f"{META}virtual_packages": json.dumps(
            {k: dict(v) for k, v in virtual_packages.items()}, sort_keys=True
        ),
        f"{META}exclude": json.dumps(
            [{"name": e.name, "reason": e.reason} for e in recipe.exclude]
        ),
        f"{META}channel_data": json.dumps(list(channel_data)),
        **{f"{META}{k}": v for k, v in (extra_metadata or {}).items()},
    }
    meta = LockMeta(
        # conda-lock's per-platform input hash; `conda-lock render` prints it as input_hash
        content_hash={p: h for p in recipe.platforms},
        channels=[Channel(url=resolve_channel(c), used_env_vars=()) for c in recipe.channels],
        platforms=list(recipe.platforms),
        sources=[recipe.path.name if recipe.path else f"{recipe.name}.yaml"],
        custom_metadata=custom,
    )
    return Lockfile(package=packages, metadata=meta)
