"""The build pipeline: recipes -> real solves -> conda-lock files; --check says if locks are
current. ``BuildOptions`` in, a Report out; the command line and the API both call ``build``."""

from __future__ import annotations

import hashlib
import json
import socket
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from envcheck import values
from envcheck.atomic import check_writable, write_files_atomically
from envcheck.destinations import check_destination
from envcheck.errors import BadInput, EnvcheckError, StaleLock, Unsolvable
from envcheck.lockfile.condalock import preload_conda_lock
from envcheck.lockfile.model import Lock
from envcheck.lockfile.pip_package import PipPackage
from envcheck.lockfile.read import read_lock, read_lockfile_model
from envcheck.lockfile.write import lock_paths, render_lock_texts
from envcheck.report import Report, Result, Status, Table
from envcheck.resolve.changes import Change, changes_table, compare, version_build
from envcheck.resolve.lockdoc import build_lockfile
from envcheck.resolve.recipe import Recipe, load_recipe
from envcheck.resolve.solve import (
    DEFAULT_FETCH_TIMEOUT_S,
    SolvedPackage,
    SolveFailed,
    is_local,
    local_path,
    resolve_channel,
    solve_specs,
    virtual_packages,
)

EXCLUDED_BUILD = "excluded-by-recipe"  # a build string no package has: the spec never matches


@dataclass(frozen=True)
class BuildOptions:
    """What one build does; ``envcheck build``'s flags, typed."""

    recipes: tuple[Path, ...]
    out: Path = Path("locks")
    check: bool = False  # solve nothing: say whether each lock is current
    platform: str | None = None  # build only this platform of each recipe
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S
    channel_data: tuple[str, ...] = ()  # solve against these channels instead of the recipe's
    lint: bool = True  # refuse pins the RAPIDS release record contradicts
    try_: tuple[str, ...] = ()  # candidates to try one by one (``--try``): writes no lock

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "recipes", tuple(values.path(r, "RECIPE") for r in values.sequence(
            self.recipes, "RECIPE")))
        if not self.recipes:
            raise BadInput("build: give at least one recipe")
        set_(self, "out", values.path(self.out, "--out"))
        values.flag(self.check, "--check")
        values.optional_text(self.platform, "--platform")
        set_(self, "fetch_timeout", values.seconds(self.fetch_timeout, "--fetch-timeout"))
        set_(self, "channel_data", values.words(self.channel_data, "--channel-data"))
        values.flag(self.lint, "lint")
        set_(self, "try_", values.words(self.try_, "--try"))


# --- solving one recipe --------------------------------------------------------------------


def exclusion_constraints(recipe: Recipe) -> list[str]:
    """Constraints no record satisfies: the solver must find a way around excluded packages."""
    return [f"{e.name}[build={EXCLUDED_BUILD}]" for e in recipe.exclude]


def requirement_chain(
    roots: Sequence[str], solved: Sequence[SolvedPackage], target: str
) -> list[str] | None:
    """Shortest path 'recipe entry -> package -> ... -> target' through the solved depends."""
    from rattler import MatchSpec

    by_name = {p.name: p for p in solved}
    start: dict[str, str] = {}
    for entry in roots:
        name = MatchSpec(entry).name.normalized
        if name in by_name:
            start.setdefault(name, entry)
    prev: dict[str, str | None] = {n: None for n in start}
    queue = deque(start)
    while queue:
        name = queue.popleft()
        if name == target:
            path = [name]
            while (back := prev[path[-1]]) is not None:
                path.append(back)
            steps = [f"{by_name[n].name} {by_name[n].version}" for n in reversed(path)]
            return [f"recipe entry {start[path[-1]]!r}", *steps]
        for dep in by_name[name].depends:
            dn = dep.split(" ")[0].split("[")[0]
            if dn in by_name and dn not in prev:
                prev[dn] = name
                queue.append(dn)
    return None


def _solve_platform(
    recipe: Recipe,
    channels: Sequence[str],
    platform: str,
    vps: Mapping[str, str],
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S,
) -> list[SolvedPackage]:
    specs = list(recipe.dependencies)
    constraints = exclusion_constraints(recipe)
    try:
        solved = solve_specs(
            specs, channels, platform, vps, constraints=constraints, fetch_timeout=fetch_timeout
        )
    except SolveFailed as first:
        raise explain_failure(recipe, channels, platform, vps, first, fetch_timeout) from None
    leaked = recipe.excluded_names & {p.name for p in solved}
    if leaked:  # the constraints forbid this; a solver that ignored them must not go unnoticed
        raise EnvcheckError(f"the solver returned excluded packages: {', '.join(sorted(leaked))}")
    return solved


def explain_failure(
    recipe: Recipe,
    channels: Sequence[str],
    platform: str,
    vps: Mapping[str, str],
    failure: SolveFailed,
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S,
) -> Unsolvable:
    """Why the recipe does not solve: a dependency needs an excluded package, or entries clash."""
    specs = list(recipe.dependencies)
    where = f"{recipe.name} ({platform})"
    if recipe.exclude:
        try:
            free = solve_specs(specs, channels, platform, vps, fetch_timeout=fetch_timeout)
        except SolveFailed:
            free = None  # unsolvable even without exclusions: bisect below
        if free is not None:
            chains = []
            for e in recipe.exclude:
                chain = requirement_chain(specs, free, e.name)
                if chain:
                    chains.append(
                        f"{e.name} is excluded ({e.reason}) but required: " + " -> ".join(chain)
                    )
            if chains:
                return Unsolvable(f"{where}: " + "; ".join(chains), detail=failure.message)
    glibc = recipe.system.get("glibc")
    if glibc:
        from envcheck.resolve import el7

        dirs = [local_path(resolve_channel(c)) for c in channels if is_local(resolve_channel(c))]
        catalogue = el7.repodata_catalogue(dirs, [platform, "noarch"])
        blocked = el7.blocked_entries(specs, glibc, catalogue)
        if blocked:
            return Unsolvable(f"{where}: " + "; ".join(blocked), detail=failure.message)
    from envcheck.resolve import conflicts

    constraints = exclusion_constraints(recipe)

    def outcome(sub: Sequence[str]) -> conflicts.SolveOutcome:
        try:
            solve_specs(
                sub, channels, platform, vps, constraints=constraints, fetch_timeout=fetch_timeout
            )
        except SolveFailed as e:
            return conflicts.SolveOutcome(False, e.message)
        return conflicts.SolveOutcome(True)

    try:
        diagnosis = conflicts.diagnose(specs, outcome, virtual_packages=vps)
    except conflicts.NothingToDiagnose:  # the solve is flaky, or a timeout read as a failure
        return Unsolvable(f"{where}: {failure}", detail=failure.message)
    detail = f"solver message for the whole recipe:\n{failure.message}"
    if diagnosis.solver_message and diagnosis.solver_message != failure.message:
        detail += f"\n\nfor {', '.join(diagnosis.entries)} alone:\n{diagnosis.solver_message}"
    detail += f"\n\n({diagnosis.solves} solves, {diagnosis.seconds:.2f} s to find the entries)"
    return Unsolvable(f"{where}: {diagnosis.summary()}", detail=detail)


def _repodata_info(head: bytes) -> dict[str, Any]:
    """The repodata's ``info`` object when it comes first (as sorted JSON writes it), else {}."""
    text = head.decode("utf-8", errors="replace")
    at = text.find('"info"')
    start = text.find("{", at) if at >= 0 else -1
    if start < 0:
        return {}
    try:
        info, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def channel_data(channels: Sequence[str], platform_list: Sequence[str]) -> list[str]:
    """One line per channel saying what data the solve read: sha256 of each local repodata,
    and what a snapshot says of itself (its source lock, the real channel its URLs point at).
    """
    lines = []
    for ch in channels:
        url = resolve_channel(ch)
        if not is_local(url):
            lines.append(f"{url} (live channel, fetched at build time)")
            continue
        root = local_path(url)
        parts = []
        about: dict[str, str] = {}
        for sd in [*platform_list, "noarch"]:
            rd = root / sd / "repodata.json"
            if rd.is_file():
                data = rd.read_bytes()
                parts.append(f"{sd}/repodata.json sha256:{hashlib.sha256(data).hexdigest()}")
                info = _repodata_info(data[:65536])
                if isinstance(info.get("envcheck_snapshot_of"), str):
                    about["snapshot of"] = info["envcheck_snapshot_of"]
                if isinstance(info.get("base_url"), str):
                    about["packages at"] = info["base_url"].rstrip("/").rsplit("/", 1)[0]
        described = "".join(f"; {k} {v}" for k, v in about.items())
        lines.append(f"{url} ({', '.join(parts)}{described})")
    return lines


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
        return read_lock(path)
    except BadInput:
        return None  # a damaged or foreign file is replaced, not merged


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
    from envcheck.resolve.heldback import resolve_pip_noting_held_back

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
    solved: dict[str, list[SolvedPackage]] = {}
    pip: dict[str, list[PipPackage]] = {}
    held: dict[str, list[str]] = {}
    vps = {p: virtual_packages(recipe.system, p) for p in recipe.platforms}
    for platform in platforms:
        solved[platform] = _solve_platform(recipe, channels, platform, vps[platform], fetch_timeout)
        pip[platform], held[platform] = resolve_pip_noting_held_back(
            recipe.pip, solved[platform], platform, recipe.system
        )
        _check_glibc(recipe, channels, platform, solved[platform], pip[platform])
    extra = {}
    if recipe.pip:
        extra["pip_index"] = "https://pypi.org/simple (resolved with uv)"
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
        if not path.exists() or path.read_bytes() != data_bytes:
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
        results += [
            Result(f"pip held back {recipe.name}", Status.WARN, line, node=platform, group="build")
            for line in held[platform]
        ]
    return results, changes, to_write


def _check_glibc(
    recipe: Recipe,
    channels: Sequence[str],
    platform: str,
    solved: Sequence[SolvedPackage],
    pip: Sequence[PipPackage],
) -> None:
    """Every conda record's __glibc and every wheel's manylinux tag must fit the target glibc."""
    from envcheck.resolve import el7
    from envcheck.resolve.pip import PYPI, python_version

    glibc = recipe.system.get("glibc")
    if not glibc:
        return
    dirs = [local_path(resolve_channel(c)) for c in channels if is_local(resolve_channel(c))]
    found = el7.check_solution(
        glibc,
        platform,
        ((p.name, p.version, p.depends) for p in solved),
        ((p.name, p.version, p.url.rsplit("/", 1)[-1]) for p in pip),
        dirs,
        PYPI if pip else None,
        python_version(solved) if pip else None,
    )
    if found:
        raise Unsolvable(
            f"{recipe.name} ({platform}) does not load on glibc {glibc}: "
            + "; ".join(o.line(glibc) for o in found)
        )


def _reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the channel's host opens (no data is fetched)."""
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def _head(path: Path, lines: int = 5) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as f:
        return [f.readline().rstrip("\n") for _ in range(lines)]


def check_one(recipe: Recipe, out: Path) -> Result:
    """Whether the recipe's lock exists and was built from this exact recipe content."""
    paths = lock_paths(out, recipe.name, recipe.platforms)
    check = f"lock {recipe.name}"
    problem = None
    if not paths["lock"].exists():
        problem = f"{paths['lock']} is missing"
    else:
        lock = read_lock(paths["lock"])
        if lock.recipe_hash != recipe.content_hash():
            problem = f"{paths['lock']} is stale: {recipe.path} changed since it was built"
        else:
            missing = [str(paths[p]) for p in recipe.platforms if not paths[p].exists()]
            if missing:
                problem = f"{', '.join(missing)} missing"
            else:
                want = f"# input_hash: {recipe.content_hash()}"
                stale = [str(paths[p]) for p in recipe.platforms if want not in _head(paths[p])]
                if stale:
                    problem = f"{', '.join(stale)} not written with {paths['lock'].name}"
    if problem is None:
        return Result(check, Status.PASS, f"{paths['lock']} is up to date", group="build")
    fix = f"envcheck build {recipe.path} --out {out}"
    remote = [resolve_channel(c) for c in recipe.channels if not is_local(resolve_channel(c))]
    unreachable = [u for u in remote if not _reachable(u)]
    if unreachable:
        fix = (
            f"this machine cannot reach {', '.join(unreachable)}: build the lock on a machine "
            f"that reaches them ({fix}) and commit {out}/ (see docs/build.md)"
        )
    return Result(check, Status.FAIL, problem, fix=fix, group="build")


def lint_recipes(recipes: Sequence[Recipe]) -> tuple[Table, ...]:
    """Lint against the RAPIDS release record; errors raise Unsolvable, the rest is a table."""
    from envcheck.resolve.record.lint import ERROR, lint, pip_entries
    from envcheck.resolve.record.table import load_record

    record = load_record()
    rows = []
    for r in recipes:
        # RAPIDS wheels (cudf-cu12==26.10.*) are read as the release and CUDA major they name
        findings = lint([*r.dependencies, *pip_entries(r.pip, record)], r.system, record)
        bad = [f for f in findings if f.severity == ERROR]
        if bad:
            raise Unsolvable(
                f"{r.path}: "
                + "; ".join(f.line() for f in bad)
                + " (the RAPIDS release record, envcheck/resolve/record/rapids.json; "
                "--no-lint solves anyway)"
            )
        rows += [(r.name, f.severity, f.rule, f.message, ", ".join(f.sources)) for f in findings]
    if not rows:
        return ()
    cols = ("recipe", "severity", "rule", "what the RAPIDS release record says", "source")
    return (Table("RAPIDS release record", cols, tuple(rows)),)


def build(opts: BuildOptions) -> Report:
    """Solve and write every recipe's locks (all of them or none), or with ``check`` say
    whether they are current (StaleLock when not). Bad input is refused before any solve."""
    recipes = [load_recipe(p) for p in opts.recipes]  # every recipe validated before any work
    names = [r.name for r in recipes]
    if len(set(names)) != len(names):
        raise BadInput("two recipes share a name: " + ", ".join(sorted(names)))
    out = opts.out
    if opts.check:
        return check_all(recipes, out)
    if opts.fetch_timeout <= 0:
        raise BadInput(f"--fetch-timeout must be positive, not {opts.fetch_timeout:g}")
    for r in recipes:
        _platforms(r, opts.platform)
    notes = lint_recipes(recipes) if opts.lint else ()  # before any solve: fails fast
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
            explain_failure,
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
            print(f"envcheck: {recipe}: {severity}: {rule}: {message}{where}", file=sys.stderr)


def check_all(recipes: Sequence[Recipe], out: Path) -> Report:
    """``build --check``: the report when every lock is current, else StaleLock naming each."""
    results = tuple(check_one(r, out) for r in recipes)
    report = Report("envcheck build --check", results=results, environment={"out": str(out)})
    if report.status is Status.PASS:
        return report
    bad = [r for r in results if r.status is not Status.PASS]
    raise StaleLock(
        f"{len(bad)} of {len(results)} locks need a rebuild: "
        + "; ".join(f"{r.message} (fix: {r.fix})" for r in bad)
    )
