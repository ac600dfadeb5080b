"""envcheck build RECIPE --try a,b,c: which add-ons fit a working recipe, each tried alone.

Users add RAPIDS add-ons one at a time to a working environment to find which one breaks it
(months of `conda install cuml=22.08`: conflict; `cuspatial=22.08`: fine). Here the recipe is
solved once, then once more with each candidate added alone, all in the one solver process,
whose gateway keeps every channel's repodata in memory: the channel data is read once for all
solves. A candidate that conflicts gets the smallest set of entries that clash (conflicts.py),
in the recipe's own words. Nothing is written.

A candidate written ``pip:REQUIREMENT`` (``pip:cugraph-cu12==26.10.*``) joins the recipe's
``pip:`` entries instead: each is resolved by uv against the index beside the others, in
parallel with the recipe's own (metadata only), on top of the recipe's conda solve; a clash
names the recipe's pip entries (and conda's Python packages) that uv's derivation goes
through. Where the recipe has pip entries, a conda candidate that fits is also checked against
them (it may move Python or a package both sides hold).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Tuple

from envcheck.errors import BadInput
from envcheck.report import Report, Result, Status, Table
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import SolvedPackage, SolveFailed, solve_specs
from envcheck.resolve.solve_recipe import Solving, explain_failure
from envcheck.resolve.spec import conda_spec
from envcheck.text import shown

MAX_CANDIDATES = 200
# a comma that begins a new candidate is followed by a package name, not a version bound
_NEW_ENTRY = re.compile(r"^\s*(pip:)?[A-Za-z_][\w.-]*(::|\s|=|<|>|!|~|\[|$)")
PIP = "pip:"
PIP_WORKERS = 5  # uv processes at once: each is mostly waiting on the index


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
            pip_name(c[len(PIP):]) if c.startswith(PIP) else conda_spec(c)
        except ValueError as e:
            raise BadInput(f"--try: {e}") from None
    return list(dict.fromkeys(out))


def pip_name(requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement as e:
        # packaging's text draws a caret under the requirement on two more lines: its first
        why = (str(e).strip().splitlines() or ["invalid"])[0]
        raise ValueError(f"not a pip requirement: {shown(requirement)} ({why})") from None


def _check_names(recipe: Recipe, candidates: Sequence[str]) -> None:
    have = {conda_spec(d).name.normalized: d for d in recipe.dependencies}
    pips = {pip_name(r): r for r in recipe.pip}
    for c in candidates:
        if c.startswith(PIP):
            if pip_name(c[len(PIP):]) in pips:
                raise BadInput(f"--try {c!r}: {recipe.name} already has pip entry "
                               f"{pips[pip_name(c[len(PIP):])]!r}; a candidate adds a package")
            continue
        name = conda_spec(c).name.normalized
        if name in have:
            raise BadInput(
                f"--try {c!r}: {recipe.name} already has {have[name]!r}; a candidate adds a package"
            )
        if name in recipe.excluded_names:
            raise BadInput(f"--try {c!r}: {recipe.name} excludes {name}")


# (candidate, platform, "fits" | "conflicts", the clashing entries, why: for a fit, the
# version the candidate resolves to)
Row = Tuple[str, str, str, str, str]


def try_candidates(
    recipe: Recipe,
    candidates: Sequence[str],
    channels: Sequence[str],
    platforms: Sequence[str],
    vps: Mapping[str, Mapping[str, str]],
    constraints: Sequence[str],
    fetch_timeout: float,
) -> Report:
    _check_names(recipe, candidates)
    pip_candidates = [c for c in candidates if c.startswith(PIP)]
    rows: list[Row] = []
    t0 = time.perf_counter()
    for platform in platforms:
        conda = _CondaTrial(list(recipe.dependencies), channels, platform, vps[platform],
                            constraints, fetch_timeout)
        solved = conda.solved(conda.base)
        if isinstance(solved, SolveFailed):  # the recipe itself does not solve
            raise explain_failure(
                Solving(recipe, channels, platform, vps[platform], fetch_timeout), solved)
        pip = _PipTrial(recipe, platform) if recipe.pip or pip_candidates else None
        pip_rows = pip.try_all(pip_candidates, solved) if pip is not None else []
        rows += [_try_conda(c, conda, pip) for c in candidates if not c.startswith(PIP)]
        rows += pip_rows
    results = tuple(
        Result(f"try {c}", Status.PASS, f"fits: {why}" if why else "fits", node=platform,
               group="try") if result == "fits"
        else Result(f"try {c}", Status.WARN, f"conflicts: {why}", node=platform, group="try")
        for c, platform, result, _, why in rows)
    cols = ("candidate", "platform", "result", "smallest clashing set of entries")
    return Report(
        f"envcheck build {recipe.name} --try",
        results=results,
        tables=(Table(f"{recipe.name} + each candidate alone", cols,
                      tuple(row[:4] for row in rows)),),
        environment={"solves_seconds": f"{time.perf_counter() - t0:.2f}"},
    )


class _CondaTrial:
    """Solves of the recipe's conda entries plus one candidate, on one platform."""

    def __init__(self, base: list[str], channels: Sequence[str], platform: str,
                 vp: Mapping[str, str], constraints: Sequence[str], fetch_timeout: float) -> None:
        self.base, self.channels, self.platform, self.vp = base, channels, platform, vp
        self.constraints, self.fetch_timeout = constraints, fetch_timeout

    def solved(self, specs: Sequence[str]) -> list[SolvedPackage] | SolveFailed:
        try:
            return solve_specs(specs, self.channels, self.platform, self.vp,
                               constraints=self.constraints, fetch_timeout=self.fetch_timeout)
        except SolveFailed as e:
            return e

    def outcome(self, specs: Sequence[str]) -> Any:
        from envcheck.resolve import conflicts

        got = self.solved(specs)
        if isinstance(got, SolveFailed):
            return conflicts.SolveOutcome(False, got.message)
        return conflicts.SolveOutcome(True)


def _try_conda(c: str, conda: _CondaTrial, pip: _PipTrial | None) -> Row:
    from envcheck.resolve import conflicts

    solved = conda.solved([*conda.base, c])
    if not isinstance(solved, SolveFailed):
        clash = pip.clash(list(pip.recipe.pip), solved) if pip is not None else ""
        if isinstance(clash, str):
            name = conda_spec(c).name.normalized
            got = [p.version for p in solved if p.name == name]
            return (c, conda.platform, "fits", "", f"{name} resolves to {got[0]}" if got else "")
        who, key = clash
        return (c, conda.platform, "conflicts", _entries(who),
                f"the conda entries solve, but then the pip entries do not: {who} clash: {key}")
    try:
        d = conflicts.diagnose([*conda.base, c], conda.outcome, virtual_packages=conda.vp)
        return (c, conda.platform, "conflicts", ", ".join(d.entries), d.summary())
    except conflicts.NothingToDiagnose:  # a flaky solve: say so, not a culprit
        return (c, conda.platform, "conflicts", "",
                "the solve failed once and then passed: not reproducible")


def _entries(who: str) -> str:
    """"recipe pip entries 'a' and 'b'" -> "'a' and 'b'" (the table's column)."""
    return re.sub(r"^recipe pip entr(y|ies) ", "", who)


class _PipTrial:
    """uv resolutions of the recipe's pip entries (plus one candidate) on top of a conda solve."""

    def __init__(self, recipe: Recipe, platform: str, timeout: float = 300) -> None:
        self.recipe, self.platform, self.timeout = recipe, platform, timeout

    def _compile(self, requirements: list[str], solved: Sequence[SolvedPackage]) -> Any:
        from envcheck.resolve import pip

        target = pip.Target.of(pip.python_version(solved), self.platform, self.recipe.system)
        pins = pip.conda_python_pins(solved)
        return pip.uv_compile(requirements, pins, target, pip.PYPI, self.timeout,
                              extra_index=self.recipe.pip_extra_index)[0], pins

    def check_base(self, solved: Sequence[SolvedPackage]) -> None:
        """The recipe's own pip entries resolve, or the build's own error is raised."""
        from envcheck.resolve import pip

        if not self.recipe.pip:
            return
        proc, pins = self._compile(list(self.recipe.pip), solved)
        if proc.returncode != 0:
            raise pip._failure(proc, list(self.recipe.pip), pins, pip.PYPI)

    def clash(self, requirements: list[str],
              solved: Sequence[SolvedPackage]) -> tuple[str, str] | str:
        """The version the last requirement resolves to when they resolve; else (the entries
        uv's derivation names, why: the chain from entry to entry and uv's key line). An
        unreachable index or another failure is raised, not reported as a clash."""
        from envcheck.errors import Unreachable, Unsolvable
        from envcheck.resolve import pip

        if not requirements:
            return ""
        proc, pins = self._compile(requirements, solved)
        if proc.returncode == 0:
            name = pip.requirement_name(requirements[-1])
            got = [c.version for c in pip.parse_compiled(proc.stdout) if c.name == name]
            return f"{name} resolves to {got[0]}" if got else ""
        failure = pip._failure(proc, requirements, pins, pip.PYPI)
        if isinstance(failure, Unreachable):
            raise failure
        if not isinstance(failure, Unsolvable):  # e.g. a placeholder sdist that refuses to build
            return f"recipe pip entry {requirements[-1]!r}", failure.message
        who, key, steps = pip.explain_clash(proc.stderr, requirements, pins)
        return who, (f"{steps} (uv: {key})" if steps else key)

    def try_all(self, candidates: Sequence[str], solved: Sequence[SolvedPackage]) -> list[Row]:
        """The recipe's own pip entries (their failure is raised: nothing to add to) and each
        candidate beside them, resolved at the same time."""
        from concurrent.futures import ThreadPoolExecutor

        def one(c: str) -> Row:
            clash = self.clash([*self.recipe.pip, c[len(PIP):]], solved)
            if isinstance(clash, str):
                return (c, self.platform, "fits", "", clash)
            who, key = clash
            return (c, self.platform, "conflicts", _entries(who), f"{who} clash: {key}")

        with ThreadPoolExecutor(min(PIP_WORKERS, len(candidates) + 1)) as pool:
            base = pool.submit(self.check_base, solved)
            rows = [pool.submit(one, c) for c in candidates]
            base.result()
            return [r.result() for r in rows]
