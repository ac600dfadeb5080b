"""Locks in conda-lock's own format (its pydantic models), plus one explicit file per platform."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import posixpath
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput
from envcheck.resolve.atomic import write_files_atomically
from envcheck.resolve.recipe import Exclusion, Recipe
from envcheck.resolve.solve import SolvedPackage, resolve_channel
from envcheck.resolve.toposort import toposorted

_META = "envcheck."  # prefix of our keys in conda-lock's custom_metadata
_preload: threading.Thread | None = None
_ready = False  # conda-lock's modules are imported


def _skip_conda_lock_init() -> None:
    """Let ``import conda_lock.<module>`` run without conda-lock's package ``__init__``.

    That ``__init__`` imports conda-lock's whole CLI (``conda_lock.conda_lock``: click,
    ensureconda, its vendored conda and poetry solvers), about 0.3 s, only to re-export ``main``
    and set ``__version__``; envcheck needs its lockfile models and parser. The package is
    registered from its real spec and path, so its submodules import as usual, and its
    ``__init__`` still runs, in place, the first time something asks for a name it defines.
    """
    if "conda_lock" in sys.modules:
        return
    spec = importlib.util.find_spec("conda_lock")
    if spec is None or spec.loader is None:
        return  # not installed: the import that follows raises where it can be reported
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:
        # a submodule not imported yet is the import system's business, not __init__'s
        if not name.startswith("__") and importlib.util.find_spec(f"conda_lock.{name}"):
            raise AttributeError(name)
        del package.__getattr__
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules["conda_lock"] = package


def _import_conda_lock() -> None:
    _skip_conda_lock_init()
    import conda_lock.lockfile  # noqa: F401  (models, parser; pydantic: about 0.3 s)
    import conda_lock.models.channel  # noqa: F401


def preload_conda_lock() -> None:
    """Start importing conda-lock's lockfile modules in a thread, to overlap it with solving."""
    global _preload

    def work() -> None:
        # on ImportError the main thread's own import raises it where it can be reported
        with contextlib.suppress(ImportError):
            _import_conda_lock()

    if _preload is None:
        _preload = threading.Thread(target=work, daemon=True)
        _preload.start()


def _conda_lock_ready() -> None:
    # Two threads importing conda-lock's circular modules at once break the import: every
    # conda-lock import in this module waits for the preload first.
    global _ready
    if _ready:
        return
    if _preload is not None:
        _preload.join()
    _import_conda_lock()
    _ready = True


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


# conda-lock's help text at the top of a lock, as its write_conda_lock_file writes it for a
# lock whose packages are all in the "main" category (envcheck writes no other); a test
# compares the whole file with conda-lock's own writer, byte for byte
_HELP = """\
# This lock file was generated by conda-lock (https://github.com/conda/conda-lock). DO NOT EDIT!
#
# A "lock file" contains a concrete list of package versions (with checksums) to be installed. Unlike
# e.g. `conda env create`, the resulting environment will not change as new package versions become
# available, unless you explicitly update the lock file.
#
# Install this environment as "YOURENV" with:
#     conda-lock install -n YOURENV {lock}
# To update a single package to the latest version compatible with the version constraints in the source:
#     conda-lock lock  --lockfile {lock} --update PACKAGE
# To re-solve the entire environment, e.g. after changing a version constraint in the source file:
#     conda-lock {sources} --lockfile {lock}
"""  # noqa: E501


def conda_lock_text(lockfile: Any, filename: str) -> str:
    """The conda-lock file, as conda-lock's ``write_conda_lock_file`` writes it.

    The same model calls (sort, drop virtual packages, ``to_v1().dict_for_output()``), dumped
    with libyaml's emitter instead of PyYAML's pure-Python one (10x faster for the same
    text). A lock with categories other than main is left to conda-lock's writer.
    """
    _conda_lock_ready()
    import yaml

    if not yaml.__with_libyaml__ or any(p.categories != {"main"} for p in lockfile.package):
        return _conda_lock_text_by_conda_lock(lockfile, filename)
    lockfile.alphasort_inplace()
    lockfile.filter_virtual_packages_inplace()
    sources = " ".join("-f " + s for s in lockfile.metadata.sources)
    body = yaml.dump(lockfile.to_v1().dict_for_output(), Dumper=yaml.CDumper, sort_keys=False)
    return _HELP.format(lock=filename, sources=sources) + body


def _conda_lock_text_by_conda_lock(lockfile: Any, filename: str) -> str:
    import tempfile

    from conda_lock.lockfile import write_conda_lock_file

    # conda-lock writes to a path only; render in a scratch dir, the caller writes atomically
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch) / filename
        write_conda_lock_file(lockfile, tmp, metadata_choices=None)
        return tmp.read_text()


def explicit_text(lockfile: Any, platform: str) -> str:
    """One platform's explicit file, as ``conda-lock render --kind explicit`` writes it.

    conda-lock's ``render_lockfile_for_platform`` lives in its CLI module (the 0.3 s import
    this module avoids); this follows it line for line, and a test compares the two.
    """
    _conda_lock_ready()
    lockfile.package = toposorted(lockfile.package)  # conda-lock's order, linear
    lockfile.filter_virtual_packages_inplace()
    mine = [p for p in lockfile.package if p.platform == platform and "main" in p.categories]
    lines = [
        "# Generated by conda-lock.",
        f"# platform: {platform}",
        f"# input_hash: {lockfile.metadata.content_hash.get(platform)}",
        "@EXPLICIT",
    ]
    lines += [
        posixpath.expandvars(f"{p.url}#{p.hash.md5}")
        for p in mine
        if p.manager == "conda" and not p.name.startswith("__")
    ]
    lines = [line.strip() or "#" for line in lines]  # as conda-lock sanitizes them
    for p in mine:
        if p.manager != "pip":
            continue
        if p.source and p.source.type == "url":
            lines.append(f"# pip {p.name} @ {p.source.url}")
        else:
            sha = f"#sha256={p.hash.sha256}" if p.hash.sha256 else ""
            lines.append(f"# pip {p.name} @ {p.url}{sha}")
    return "\n".join(lines) + "\n"


def render_lock_texts(lockfile: Any, name: str, out: Path) -> dict[Path, str]:
    """File path -> text for the conda-lock file and each platform's explicit file."""
    paths = lock_paths(out, name, lockfile.metadata.platforms)
    texts = {paths["lock"]: conda_lock_text(lockfile, paths["lock"].name)}
    for platform in lockfile.metadata.platforms:
        texts[paths[platform]] = explicit_text(lockfile.model_copy(deep=True), platform)
    return texts


def write_lock(lockfile: Any, name: str, out: Path) -> list[Path]:
    """Write every file of one lock; all of them are replaced, or none."""
    texts = render_lock_texts(lockfile, name, out)
    write_files_atomically({p: t.encode() for p, t in texts.items()})
    return list(texts)


def parse_lockfile(path: Path) -> Any:
    """What conda-lock's ``parse_conda_lock_file`` returns, read with libyaml.

    The same steps (version check, its models, toposort) with libyaml's parser instead of
    PyYAML's pure-Python one: 0.4 s instead of 1.5 s for a lock of 1,333 packages. A test
    compares the two models.
    """
    _conda_lock_ready()
    import yaml
    from conda_lock.lockfile import (
        Lockfile,
        LockfileV1,
        MissingLockfileVersion,
        UnknownLockfileVersion,
        lockfile_v1_to_v2,
        parse_conda_lock_file,
    )

    if not yaml.__with_libyaml__:
        return parse_conda_lock_file(path)
    with path.open() as f:
        content = yaml.load(f, Loader=yaml.CSafeLoader)
    if not isinstance(content, dict):
        raise ValueError("not a mapping")
    version = content.pop("version", None)
    if version == 1:
        lockfile = lockfile_v1_to_v2(LockfileV1.model_validate(content))
    elif version == 2:
        lockfile = Lockfile.model_validate(content)
    elif version is None:
        raise MissingLockfileVersion(f"{path} is missing a version")
    else:
        raise UnknownLockfileVersion(f"{path} has unknown version {version}")
    lockfile.package = toposorted(lockfile.package)  # conda-lock's order, linear
    return lockfile


def read_lockfile_model(path: Path) -> Any:
    """conda-lock's own model of a lock file; BadInput if unreadable."""
    try:
        return parse_lockfile(path)
    except FileNotFoundError:
        raise BadInput(f"lock {path} does not exist") from None
    except Exception as e:  # yaml errors, pydantic validation, unknown versions
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{path} is not a readable conda-lock file: {first}") from None


_VP_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")  # __cuda, __glibc, __linux: numbers


def _check_virtual_packages(path: Path, vps: Any) -> None:
    """The recorded virtual packages are versions (a hand-edited `__glibc: banana` is not)."""
    if not isinstance(vps, dict):
        raise BadInput(f"{path}: envcheck metadata is damaged (virtual_packages is not a mapping)")
    for platform, packages in vps.items():
        if not isinstance(packages, dict):
            raise BadInput(f"{path}: envcheck metadata is damaged (virtual_packages.{platform})")
        for name, version in packages.items():
            if name in ("__cuda", "__glibc", "__linux") and not (
                isinstance(version, str) and _VP_VERSION.match(version)
            ):
                raise BadInput(
                    f"{path}: virtual package {name} {version!r} ({platform}) is not a version"
                )


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
    _check_virtual_packages(path, vps)
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
