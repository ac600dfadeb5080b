"""Locks in conda-lock's own format (its pydantic models), plus one explicit file per platform."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.build.atomic import write_files_atomically
from envcheck.build.recipe import Exclusion, Recipe
from envcheck.build.solve import SolvedPackage, resolve_channel
from envcheck.errors import BadInput

_META = "envcheck."  # prefix of our keys in conda-lock's custom_metadata
_preload: threading.Thread | None = None


def preload_conda_lock() -> None:
    """Start importing conda-lock (about 0.6 s) in a thread, to overlap it with solving."""
    global _preload

    def work() -> None:
        try:
            import conda_lock.conda_lock  # noqa: F401
            import conda_lock.lockfile  # noqa: F401
        except ImportError:
            pass  # the main thread's own import raises it where it can be reported

    if _preload is None:
        _preload = threading.Thread(target=work, daemon=True)
        _preload.start()


def _conda_lock_ready() -> None:
    # Two threads importing conda-lock's circular modules at once break the import: every
    # conda-lock import in this module waits for the preload first.
    if _preload is not None:
        _preload.join()


@dataclass(frozen=True)
class PipPackage:
    """A wheel or sdist chosen by the pip resolution, pinned by url and sha256."""

    name: str
    version: str
    url: str
    sha256: str
    dependencies: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str
    manager: str  # "conda" or "pip"
    platform: str
    url: str
    build: str | None
    md5: str | None
    sha256: str | None


@dataclass(frozen=True)
class Lock:
    """What envcheck needs back from a lock file."""

    path: Path
    recipe: str
    recipe_hash: str
    platforms: tuple[str, ...]
    channels: tuple[str, ...]
    virtual_packages: Mapping[str, Mapping[str, str]]  # platform -> name -> version
    exclusions: tuple[Exclusion, ...]
    channel_data: tuple[str, ...]  # what each channel's package data was when solved
    packages: tuple[LockedPackage, ...]

    def for_platform(self, platform: str) -> dict[tuple[str, str], LockedPackage]:
        """(manager, name) -> package."""
        return {(p.manager, p.name): p for p in self.packages if p.platform == platform}


def lock_paths(out: Path, name: str, platforms: Sequence[str]) -> dict[str, Path]:
    """'lock' -> the conda-lock file; each platform -> its explicit file."""
    paths = {"lock": out / f"{name}.conda-lock.yml"}
    paths.update({p: out / f"{name}.{p}.lock" for p in platforms})
    return paths


def _split_dep(dep: str) -> tuple[str, str]:
    """'python >=3.8' -> ('python', '>=3.8'); conda-lock keeps dependencies as name -> spec."""
    name, _, rest = dep.strip().partition(" ")
    return name, rest.strip() or "*"


def _conda_dependency(p: SolvedPackage, platform: str) -> Any:
    _conda_lock_ready()
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
    _conda_lock_ready()
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
    _conda_lock_ready()
    from conda_lock.lockfile.v2prelim.models import Lockfile, LockMeta
    from conda_lock.models.channel import Channel

    packages = [_conda_dependency(p, plat) for plat, ps in solved.items() for p in ps]
    packages += [_pip_dependency(p, plat) for plat, ps in pip.items() for p in ps]
    h = recipe.content_hash()
    custom = {
        f"{_META}recipe": recipe.name,
        f"{_META}recipe_hash": h,
        f"{_META}virtual_packages": json.dumps(
            {k: dict(v) for k, v in virtual_packages.items()}, sort_keys=True
        ),
        f"{_META}exclude": json.dumps(
            [{"name": e.name, "reason": e.reason} for e in recipe.exclude]
        ),
        f"{_META}channel_data": json.dumps(list(channel_data)),
        **{f"{_META}{k}": v for k, v in (extra_metadata or {}).items()},
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


def render_lock_texts(lockfile: Any, name: str, out: Path) -> dict[Path, str]:
    """File path -> text for the conda-lock file and each platform's explicit file."""
    import tempfile

    _conda_lock_ready()
    from conda_lock.conda_lock import render_lockfile_for_platform
    from conda_lock.lockfile import write_conda_lock_file

    paths = lock_paths(out, name, lockfile.metadata.platforms)
    texts: dict[Path, str] = {}
    # conda-lock writes to a path only; render in a scratch dir, the caller writes atomically
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch) / paths["lock"].name
        write_conda_lock_file(lockfile, tmp, metadata_choices=None)
        texts[paths["lock"]] = tmp.read_text()
    for platform in lockfile.metadata.platforms:
        lines = render_lockfile_for_platform(
            lockfile=lockfile.model_copy(deep=True),
            include_dev_dependencies=False,
            extras=None,
            kind="explicit",
            platform=platform,
            suppress_warning_for_pip_and_explicit=True,
        )
        texts[paths[platform]] = "\n".join(lines) + "\n"
    return texts


def write_lock(lockfile: Any, name: str, out: Path) -> list[Path]:
    """Write every file of one lock; all of them are replaced, or none."""
    texts = render_lock_texts(lockfile, name, out)
    write_files_atomically({p: t.encode() for p, t in texts.items()})
    return list(texts)


def read_lockfile_model(path: Path) -> Any:
    """conda-lock's own model of a lock file (its parser); BadInput if unreadable."""
    _conda_lock_ready()
    from conda_lock.lockfile import parse_conda_lock_file

    try:
        return parse_conda_lock_file(path)
    except FileNotFoundError:
        raise BadInput(f"lock {path} does not exist") from None
    except Exception as e:  # yaml errors, pydantic validation, unknown versions
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{path} is not a readable conda-lock file: {first}") from None


def read_lock(path: Path) -> Lock:
    """Read a conda-lock file written by envcheck; BadInput if it is missing or not one."""
    lf = read_lockfile_model(path)
    custom = lf.metadata.custom_metadata or {}
    if f"{_META}recipe_hash" not in custom:
        raise BadInput(f"{path} was not written by envcheck build (no recipe hash in metadata)")
    try:
        vps = json.loads(custom.get(f"{_META}virtual_packages", "{}"))
        excl = tuple(
            Exclusion(e["name"], e["reason"]) for e in json.loads(custom[f"{_META}exclude"])
        )
        data = tuple(json.loads(custom.get(f"{_META}channel_data", "[]")))
    except (KeyError, TypeError, ValueError) as e:
        raise BadInput(f"{path}: envcheck metadata is damaged ({e})") from None
    return Lock(
        path=path,
        recipe=custom.get(f"{_META}recipe", ""),
        recipe_hash=custom[f"{_META}recipe_hash"],
        platforms=tuple(lf.metadata.platforms),
        channels=tuple(c.url for c in lf.metadata.channels),
        virtual_packages=vps,
        exclusions=excl,
        channel_data=data,
        packages=tuple(
            LockedPackage(
                name=p.name,
                version=p.version,
                manager=p.manager,
                platform=p.platform,
                url=p.url,
                build=p.build,
                md5=p.hash.md5,
                sha256=p.hash.sha256,
            )
            for p in lf.package
        ),
    )
