"""Solving one recipe for one platform: its exclusions as constraints, and when the solve
fails, why (an entry needs an excluded package, a record needs a newer glibc, entries clash);
a solution whose records or wheels need a newer glibc than the recipe's is refused."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envcheck.errors import EnvcheckError, Unsolvable
from envcheck.lockfile.pip_package import PipPackage
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import (
    DEFAULT_FETCH_TIMEOUT_S,
    SolvedPackage,
    SolveFailed,
    is_local,
    local_path,
    resolve_channel,
    solve_specs,
)

EXCLUDED_BUILD = "excluded-by-recipe"  # a build string no package has: the spec never matches


@dataclass(frozen=True)
class Solving:
    """One recipe solved for one platform: what its solve, the explanation of a failed one and
    the glibc check of the solution all read."""

    recipe: Recipe
    channels: Sequence[str]  # the recipe's, or --channel-data
    platform: str
    vps: Mapping[str, str]  # the platform's virtual packages (the recipe's system)
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT_S


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


def solve_platform(s: Solving) -> list[SolvedPackage]:
    """The recipe's solution for the platform; an Unsolvable saying why when there is none."""
    try:
        solved = solve_specs(list(s.recipe.dependencies), s.channels, s.platform, s.vps,
                             constraints=exclusion_constraints(s.recipe),
                             fetch_timeout=s.fetch_timeout)
    except SolveFailed as first:
        raise explain_failure(s, first) from None
    leaked = s.recipe.excluded_names & {p.name for p in solved}
    if leaked:  # the constraints forbid this; a solver that ignored them must not go unnoticed
        raise EnvcheckError(f"the solver returned excluded packages: {', '.join(sorted(leaked))}")
    return solved


def explain_failure(s: Solving, failure: SolveFailed) -> Unsolvable:
    """Why the recipe does not solve: a dependency needs an excluded package, or entries clash."""
    recipe, channels, platform, vps, fetch_timeout = (
        s.recipe, s.channels, s.platform, s.vps, s.fetch_timeout)
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


def check_glibc(s: Solving, solved: Sequence[SolvedPackage], pip: Sequence[PipPackage]) -> None:
    """Every conda record's __glibc and every wheel's manylinux tag must fit the target glibc."""
    recipe, channels, platform = s.recipe, s.channels, s.platform
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
