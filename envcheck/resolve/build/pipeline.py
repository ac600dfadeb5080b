"""The build pipeline: recipes -> real solves -> conda-lock files; --check says if locks are
current. ``BuildOptions`` (options.py) in, a Report out; the command line and the API both call
``build``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envcheck.atomic import check_writable, write_files_atomically
from envcheck.destinations import check_destination
from envcheck import progress
from envcheck.errors import BadInput, EnvcheckError, Unsolvable
from envcheck.inputs import MAX_LOCK_BYTES, read_bytes
from envcheck.lockfile.condalock import preload_conda_lock, read_lockfile_model
from envcheck.lockfile.model import Lock
from envcheck.lockfile.pip_package import PipPackage
from envcheck.lockfile.read import read_built_lock
from envcheck.lockfile.write import lock_paths, render_lock_texts
from envcheck.report import Report, Result, Status, Table
from envcheck.resolve.build.options import BuildOptions
from envcheck.resolve.changes import Change, changes_table, compare, version_build
from envcheck.resolve.channel_data import channel_data
from envcheck.resolve.environment_yml import load_recipe_or_environment
from envcheck.resolve.lock_check import check_all
from envcheck.resolve.lockdoc import build_lockfile
from envcheck.resolve.pip_platform import wheels_note
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import (
    DEFAULT_FETCH_TIMEOUT_S,
    SolvedPackage,
    resolve_channel,
    start_solver,
    virtual_packages,
)
from envcheck.resolve.solve_recipe import (
    Solving,
    check_glibc,
    exclusion_constraints,
    solve_platform,
)
from envcheck.text import say

# --- comparing with the previous lock -----------------------------------------------------


def lock_changes(old: Lock | None, lockfile: Any) -> list[Change]:
    if old is None:  # a first lock: everything would read as added
        return []
    after = {
        (p.platform, p.manager, p.name): version_build(p.version, p.build) for p in lockfile.package
    }
    before = {
        (p.platform, p.manager, p.name): version_build(p.version, p.build) for p in old.packages
    }
    return compare(before, after)


# --- the verb ----------------------------------------------------------------------------


def _platforms(recipe: Recipe, only: str | None) -> tuple[str, ...]:
    if only is None:
        return recipe.platforms
    if only not in recipe.platforms:
        raise BadInput(
            f"{recipe.path}: --platform {only} is not among {', '.join(recipe.platforms)}"
        )
    return (only,)


def _previous(path: Path) -> Lock | None:
    if not path.exists():
        return None
    try:
        return read_built_lock(path)
    except BadInput:
        return None  # a damaged or foreign file is replaced, not merged


def _solve_platforms(
    recipe: Recipe, channels: list[str], platforms: Sequence[str], vps: dict[str, Any],
    fetch_timeout: float,
) -> tuple[dict[str, list[SolvedPackage]], dict[str, list[PipPackage]], dict[str, list[str]]]:
    """Each platform's conda solve, then its pip resolution on PyPI (what was held back
    beside it), the progress line saying which."""
    from envcheck.resolve.heldback import resolve_pip_noting_held_back

    solved: dict[str, list[SolvedPackage]] = {}
    pip: dict[str, list[PipPackage]] = {}
    held: dict[str, list[str]] = {}
    with progress.step(f"solving {recipe.name}") as line:
        for i, platform in enumerate(platforms, 1):
            where = f"{recipe.name} for {platform}" + (
                f" ({i}/{len(platforms)} platforms)" if len(platforms) > 1 else "")
            line.say(f"solving {where}: {len(recipe.dependencies)} conda specs, rattler, "
                     f"{len(channels)} channel{'s' * (len(channels) != 1)}")
            solving = Solving(recipe, channels, platform, vps[platform], fetch_timeout)
            solved[platform] = solve_platform(solving)
            if recipe.pip:
                line.say(f"resolving {where}: {len(recipe.pip)} pip requirements on PyPI, uv")
            pip[platform], held[platform] = resolve_pip_noting_held_back(
                recipe, solved[platform], platform)
            check_glibc(solving, solved[platform], pip[platform])
    return solved, pip, held


def build_one(
    recipe: Recipe,
    out: Path,
    only: str | None,
    data: Sequence[str] | None,
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S,
) -> tuple[list[Result], list[Change], dict[Path, bytes]]:
    """Solve one recipe; returns (results, changes, the files to write).

    Nothing is written here: ``run`` writes every recipe's files in one swap, so an interrupt
    or a failure leaves every previous lock as it was.
    """
    channels = list(data or recipe.channels)
    platforms = _platforms(recipe, only)
    paths = lock_paths(out, recipe.name, recipe.platforms)
    old = _previous(paths["lock"])
    carried: list[Any] = []
    if only is not None and len(recipe.platforms) > 1:
        if old is None or old.recipe_hash != recipe.content_hash():
            raise BadInput(
                f"{paths['lock']} is missing or stale for the other platforms of {recipe.name}; "
                "build without --platform"
            )
        carried = [p for p in read_lockfile_model(paths["lock"]).package if p.platform != only]
    vps = {p: virtual_packages(recipe.system, p) for p in recipe.platforms}
    solved, pip, held = _solve_platforms(recipe, channels, platforms, vps, fetch_timeout)
    extra = {}
    if recipe.pip:
        extra["pip_index"] = "https://pypi.org/simple (resolved with uv)" + "".join(
            f"; extra index {u}" for u in recipe.pip_extra_index)
    if data:
        extra["recipe_channels"] = ", ".join(resolve_channel(c) for c in recipe.channels)
    if carried and old is not None:
        # the other platforms keep the channel data they were solved against
        prior = [d for d in old.channel_data if d not in channel_data(channels, platforms)]
        extra["carried_channel_data"] = "; ".join(prior)
    lockfile = build_lockfile(recipe, solved, pip, vps, channel_data(channels, platforms), extra)
    lockfile.package.extend(carried)
    changes = lock_changes(old, lockfile)
    texts = render_lock_texts(lockfile, recipe.name, out)
    to_write = {}
    for path, text in texts.items():
        data_bytes = text.encode()
        if not path.exists() or read_bytes(path, "lock", MAX_LOCK_BYTES) != data_bytes:
            to_write[path] = data_bytes
    results = []
    for platform in platforms:
        n_pip = len(pip[platform])
        msg = f"{len(solved[platform])} conda" + (f" + {n_pip} pip" if recipe.pip else "")
        msg += f" packages -> {paths['lock']}"
        if old is None:
            msg += " (new lock)"
        else:
            n = sum(1 for c in changes if c.platform == platform)
            msg += f" ({n} change{'s' if n > 1 else ''})" if n else " (unchanged)"
        results.append(
            Result(f"build {recipe.name}", Status.PASS, msg, node=platform, group="build")
        )
        note = wheels_note([p.url.rsplit("/", 1)[-1] for p in pip[platform]], platform,
                           recipe.system)
        if note:
            results.append(Result(f"pip wheels {recipe.name}", Status.PASS, note, node=platform,
                                  group="build"))
        results += [
            Result(f"pip held back {recipe.name}", Status.WARN, line, node=platform, group="build")
            for line in held[platform]
        ]
    return results, changes, to_write


def lint_recipes(recipes: Sequence[Recipe]) -> tuple[Table, ...]:
    """Lint against the RAPIDS release record (conda entries and pip requirements); every
    finding is a row of the table, and errors raise Unsolvable carrying it."""
    from envcheck.resolve.record.lint import ERROR, lint
    from envcheck.resolve.record.table import load_record

    record = load_record()
    rows, bad = [], []
    for r in recipes:
        findings = lint(r.dependencies, r.system, record, pip=r.pip, platforms=r.platforms)
        bad += [(r, f) for f in findings if f.severity == ERROR]
        rows += [(r.name, f.severity, f.rule, f.message, ", ".join(f.sources)) for f in findings]
    cols = ("recipe", "severity", "rule", "what the RAPIDS release record says", "source")
    tables = (Table("RAPIDS release record", cols, tuple(rows)),) if rows else ()
    if bad:
        err = Unsolvable(
            "; ".join(f"{r.path}: {f.line()}" for r, f in bad)
            + " (the RAPIDS release record, envcheck/resolve/record/rapids.json; "
            "--no-lint solves anyway)"
        )
        err.tables = tables
        raise err
    return tables


def build(opts: BuildOptions) -> Report:
    """Solve and write every recipe's locks (all of them or none), or with ``check`` say
    whether they are current (StaleLock when not). Bad input is refused before any solve."""
    # every recipe (or environment.yml) validated before any work
    recipes = [load_recipe_or_environment(p, opts.platform) for p in opts.recipes]
    if not opts.check:
        start_solver()  # its start-up overlaps the lint and the checks below
    names = [r.name for r in recipes]
    if len(set(names)) != len(names):
        raise BadInput("two recipes share a name: " + ", ".join(sorted(names)))
    if opts.fetch_timeout <= 0:
        raise BadInput(f"--fetch-timeout must be positive, not {opts.fetch_timeout:g}")
    for r in recipes:
        _platforms(r, opts.platform)
    notes = lint_recipes(recipes) if opts.lint else ()  # before any solve: fails fast
    try:
        return _build_linted(recipes, opts, notes)
    except EnvcheckError as e:  # the error report carries what the lint found
        e.tables = (*notes, *e.tables)
        raise


def _build_linted(
    recipes: Sequence[Recipe], opts: BuildOptions, notes: tuple[Table, ...]
) -> Report:
    out = opts.out
    if opts.check:
        report = check_all(recipes, out)
        return Report(report.title, results=report.results, tables=(*notes, *report.tables),
                      environment=report.environment)
    for c in opts.channel_data:
        resolve_channel(c)  # a URL the solver cannot read is bad input before any work
    if opts.try_:
        return _try(recipes, opts, notes)
    check_writable(out)
    for r in recipes:  # a lock path that is a device, a FIFO, a directory: refused now
        for path in lock_paths(out, r.name, r.platforms).values():
            check_destination(path, f"lock {path}", replace=True)
    preload_conda_lock()
    results: list[Result] = []
    changes: list[tuple[str, Change]] = []
    to_write: dict[Path, bytes] = {}
    for recipe in recipes:
        try:
            res, ch, files = build_one(
                recipe, out, opts.platform, opts.channel_data or None, opts.fetch_timeout
            )
        except EnvcheckError:
            _print_notes(notes)  # what the record warned of may be why the solve failed
            raise
        results += res
        changes += [(recipe.name, c) for c in ch]
        to_write.update(files)
    write_files_atomically(to_write)  # the commit point: every lock of the run, or none
    tables: tuple[Table, ...] = notes
    if changes:
        tables += (changes_table(changes),)
    return Report(
        "envcheck build", results=tuple(results), tables=tables, environment={"out": str(out)}
    )


def _try(recipes: Sequence[Recipe], opts: BuildOptions, notes: tuple[Table, ...]) -> Report:
    from envcheck.resolve.trial import parse_candidates, try_candidates

    if len(recipes) != 1:
        raise BadInput("--try takes one recipe")
    (recipe,) = recipes
    candidates = parse_candidates(list(opts.try_))
    vps = {p: virtual_packages(recipe.system, p) for p in recipe.platforms}
    channels = list(opts.channel_data or recipe.channels)
    try:
        report = try_candidates(
            recipe,
            candidates,
            channels,
            _platforms(recipe, opts.platform),
            vps,
            exclusion_constraints(recipe),
            opts.fetch_timeout,
        )
    except EnvcheckError:
        _print_notes(notes)
        raise
    return Report(
        report.title,
        results=report.results,
        tables=notes + report.tables,
        environment=report.environment,
    )


def _print_notes(notes: Sequence[Table]) -> None:
    """The lint's warnings and notes on stderr, for a build that ends in an error."""
    for table in notes:
        for recipe, severity, rule, message, source in table.rows:
            where = f" [{source}]" if source else ""
            say(f"{recipe}: {severity}: {rule}: {message}{where}")
