"""envcheck build RECIPE --try a,b,c: which add-ons fit a working recipe, each tried alone.

Users add RAPIDS add-ons one at a time to a working environment to find which one breaks it
(months of `conda install cuml=22.08`: conflict; `cuspatial=22.08`: fine). Here the recipe is
solved once, then once more with each candidate added alone, all in the one solver process,
whose gateway keeps every channel's repodata in memory: the channel data is read once for all
solves. A candidate that conflicts gets the smallest set of entries that clash (conflicts.py),
in the recipe's own words. Nothing is written.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence

from envcheck.errors import BadInput
from envcheck.report import Report, Result, Status, Table
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import SolveFailed, solve_specs
from envcheck.resolve.spec import conda_spec

MAX_CANDIDATES = 200
# a comma that begins a new candidate is followed by a package name, not a version bound
_NEW_ENTRY = re.compile(r"^\s*[A-Za-z_][\w.-]*(::|\s|=|<|>|!|~|\[|$)")


def parse_candidates(values: Sequence[str]) -> list[str]:
    """'cuml=22.08,cudf>=22.08,<22.10,cuspatial' -> the three specs (a range keeps its comma)."""
    out: list[str] = []
    for value in values:
        for piece in value.split(","):
            if out and piece and not _NEW_ENTRY.match(piece) and out[-1] is not None:
                out[-1] = f"{out[-1]},{piece.strip()}"
            elif piece.strip():
                out.append(piece.strip())
    if not out:
        raise BadInput("--try names no candidate")
    if len(out) > MAX_CANDIDATES:
        raise BadInput(f"--try names {len(out)} candidates; the limit is {MAX_CANDIDATES}")
    for c in out:
        try:
            conda_spec(c)
        except ValueError as e:
            raise BadInput(f"--try: {e}") from None
    return list(dict.fromkeys(out))


def _check_names(recipe: Recipe, candidates: Sequence[str]) -> None:
    have = {conda_spec(d).name.normalized: d for d in recipe.dependencies}
    for c in candidates:
        name = conda_spec(c).name.normalized
        if name in have:
            raise BadInput(
                f"--try {c!r}: {recipe.name} already has {have[name]!r}; a candidate adds a package"
            )
        if name in recipe.excluded_names:
            raise BadInput(f"--try {c!r}: {recipe.name} excludes {name}")


def try_candidates(
    recipe: Recipe,
    candidates: Sequence[str],
    channels: Sequence[str],
    platforms: Sequence[str],
    vps: Mapping[str, Mapping[str, str]],
    constraints: Sequence[str],
    fetch_timeout: float,
    explain_base,  # type: ignore[no-untyped-def] - command.explain_failure, for a broken base
) -> Report:
    from envcheck.resolve import conflicts

    _check_names(recipe, candidates)
    base = list(recipe.dependencies)
    rows: list[tuple[str, ...]] = []
    results: list[Result] = []
    t0 = time.perf_counter()
    for platform in platforms:

        def solve(specs: Sequence[str], platform: str = platform) -> conflicts.SolveOutcome:
            try:
                solve_specs(
                    specs,
                    channels,
                    platform,
                    vps[platform],
                    constraints=constraints,
                    fetch_timeout=fetch_timeout,
                )
            except SolveFailed as e:
                return conflicts.SolveOutcome(False, e.message)
            return conflicts.SolveOutcome(True)

        first = solve(base)
        if not first.ok:  # the recipe itself does not solve: nothing to add candidates to
            raise explain_base(
                recipe, channels, platform, vps[platform], SolveFailed(first.message)
            )
        for c in candidates:
            outcome = solve([*base, c])
            if outcome.ok:
                rows.append((c, platform, "fits", ""))
                results.append(Result(f"try {c}", Status.PASS, "fits", node=platform, group="try"))
                continue
            try:
                d = conflicts.diagnose([*base, c], solve, virtual_packages=vps[platform])
                clash, why = ", ".join(d.entries), d.summary()
            except conflicts.NothingToDiagnose:  # a flaky solve: say so, not a culprit
                clash, why = "", "the solve failed once and then passed: not reproducible"
            rows.append((c, platform, "conflicts", clash))
            results.append(
                Result(f"try {c}", Status.WARN, f"conflicts: {why}", node=platform, group="try")
            )
    cols = ("candidate", "platform", "result", "smallest clashing set of entries")
    return Report(
        f"envcheck build {recipe.name} --try",
        results=tuple(results),
        tables=(Table(f"{recipe.name} + each candidate alone", cols, tuple(rows)),),
        environment={"solves_seconds": f"{time.perf_counter() - t0:.2f}"},
    )
