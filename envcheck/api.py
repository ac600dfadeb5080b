"""envcheck from Python: each verb as a function that returns a Report (docs/api.md).

    import envcheck
    report = envcheck.build("recipes/rapids-24.04-el7.yaml", out="locks")
    report = envcheck.install("locks/rapids-24.04-el7.conda-lock.yml", "/opt/envs/rapids")
    report                       # in Jupyter: a table; report.exit_code(), report.to_json()

The command line calls the same pipelines. Failures raise EnvcheckError subclasses carrying the
one-line message and the exit code the command would give (``e.exit_code``); nothing here
exits the process or prints a table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Union

from envcheck import interrupts
from envcheck.errors import BadInput

if TYPE_CHECKING:
    from envcheck.report import Report

PathLike = Union[str, "os.PathLike[str]"]


def _paths(value: PathLike | Iterable[PathLike]) -> tuple[Path, ...]:
    if isinstance(value, (str, os.PathLike)):
        return (Path(value),)
    return tuple(Path(v) for v in value)


def _words(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """A comma-separated string (as the flags take it) or a sequence of names."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(w.strip() for w in value.split(",") if w.strip())
    return tuple(value)


def build(
    recipe: PathLike | Iterable[PathLike],
    out: PathLike | None = None,
    *,
    check: bool = False,
    platform: str | None = None,
    fetch_timeout: float | None = None,
    channel_data: str | Iterable[str] = (),
    lint: bool = True,
) -> Report:
    """``envcheck build``: solve one recipe (or several) into locks under ``out`` (default
    ``locks``); with ``check=True`` solve nothing and raise StaleLock when a lock is stale."""
    from envcheck.extras import require_build_extra

    require_build_extra("build")
    from envcheck.resolve.build import BuildOptions
    from envcheck.resolve.build import build as run_build
    from envcheck.resolve.solve import DEFAULT_FETCH_TIMEOUT_S

    options = BuildOptions(
        recipes=_paths(recipe),
        out=Path(out) if out is not None else Path("locks"),
        check=check,
        platform=platform,
        fetch_timeout=DEFAULT_FETCH_TIMEOUT_S if fetch_timeout is None else float(fetch_timeout),
        channel_data=(channel_data,) if isinstance(channel_data, str) else tuple(channel_data),
        lint=lint,
    )
    if not options.recipes:
        raise BadInput("build: give at least one recipe")
    with interrupts.scope():
        return run_build(options)


def install(
    lock: PathLike,
    prefix: PathLike,
    *,
    platform: str | None = None,
    cache_dir: PathLike | None = None,
    force: bool = False,
    lock_timeout: float = 600.0,
    fetch_timeout: float = 900.0,
) -> Report:
    """``envcheck install``: create ``prefix`` from ``lock``, every package's hash checked."""
    from envcheck.provision.pipeline import InstallOptions, install_lock

    options = InstallOptions(
        lock=Path(lock),
        prefix=Path(prefix),
        platform=platform,
        cache_dir=Path(cache_dir) if cache_dir is not None else None,
        force=force,
        lock_timeout=float(lock_timeout),
        fetch_timeout=float(fetch_timeout),
    )
    with interrupts.scope():
        return install_lock(options)


def recipe_new(
    rapids: str,
    cuda: str,
    os: str,  # noqa: A002 - the flag's name
    *,
    out: PathLike | None = None,
    python: str | None = None,
    toolkit: str | None = None,
    libs: str | Iterable[str] | None = None,
    with_: str | Iterable[str] = (),
    exclude: str | Iterable[str] = (),
    exclude_reason: str = "",
    pip: Iterable[str] = (),
    name: str | None = None,
    description: str = "",
    targets: Iterable[str] = (),
    channels: str | Iterable[str] | None = None,
) -> Report:
    """``envcheck recipe new``: a recipe pinned from the RAPIDS release record; its text is
    ``report.output``, or it is written to ``out``."""
    from envcheck.extras import require_build_extra

    require_build_extra("recipe new")
    from envcheck.resolve.record import new

    if os not in new.OSES:
        raise BadInput(f"recipe new: os {os!r} is not one of {', '.join(sorted(new.OSES))}")
    options = new.Options(
        rapids=rapids,
        cuda=cuda,
        os=os,
        python=python,
        toolkit=toolkit,
        libs=None if libs is None else _words(libs),
        with_=_words(with_),
        exclude=_words(exclude),
        exclude_reason=exclude_reason,
        pip=tuple(pip),
        name=name,
        description=description,
        targets=tuple(targets),
        channels=new.DEFAULT_CHANNELS if channels is None else _words(channels),
    )
    with interrupts.scope():
        return new.recipe_new(options, Path(out) if out is not None else None)
