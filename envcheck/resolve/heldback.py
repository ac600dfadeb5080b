"""Held back: a resolver satisfies a set by quietly taking an old release of an entry that has
no upper pin when the newest clashes. For each such pip entry of the recipe whose chosen
version is older than the newest release the target installs, resolve once more with
``name>=newest`` (metadata only) and read uv's explanation: which recipe entries hold it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envcheck.errors import Unreachable
from envcheck.lockfile.pip_package import PipPackage
from envcheck.resolve.pip import (
    PYPI,
    Resolution,
    Target,
    explain_clash,
    requirement_name,
    resolve,
    uv_compile,
)
from envcheck.resolve.pypi_index import newest_installable
from envcheck.resolve.recipe import Recipe
from envcheck.resolve.solve import SolvedPackage
from envcheck.resolve.uv_log import ResolverLog, clashes

UPPER = ("<", "<=", "==", "===", "~=")
RETRY_TIMEOUT_S = 120.0  # one re-resolution; past it the entry is skipped with a note


@dataclass(frozen=True)
class HeldBack:
    entry: str  # the recipe's pip entry
    name: str
    chosen: str
    newest: str
    held_by: str  # "recipe pip entries 'a' and 'b'", or why it could not be told
    key: str  # uv's line; "" when the retry did not run or solved
    chain: str = ""  # entry -> requirement -x- clashing requirement <- entry, from uv's log

    def line(self) -> str:
        why = f"{self.held_by}" + (f": {self.chain}" if self.chain else "")
        why += f" (uv: {self.key})" if self.key else ""
        return (
            f"{self.name} {self.chosen} chosen for recipe entry {self.entry!r}, the newest that "
            f"fits is {self.newest}: held back by {why}"
        )


def unpinned_entries(requirements: Sequence[str]) -> dict[str, str]:
    """name -> entry, for direct entries without an upper bound (and no URL)."""
    out = {}
    for req in requirements:
        try:
            r = Requirement(req)
        except InvalidRequirement:
            continue
        if r.url or any(s.operator in UPPER for s in r.specifier):
            continue
        out[canonicalize_name(r.name)] = req
    return out


def candidates(requirements: Sequence[str], res: Resolution) -> list[tuple[str, str, str, str]]:
    """(entry, name, chosen, newest) for each unpinned entry resolved older than the newest."""
    chosen = {p.name: p.version for p in res.packages}
    out = []
    for name, entry in unpinned_entries(requirements).items():
        files = res.index.get(name)
        if name not in chosen or not files:
            continue
        newest = newest_installable(files, res.target.python, res.target.admitted)
        if newest is not None and newest > Version(chosen[name]):
            out.append((entry, name, chosen[name], str(newest)))
    return out


def _retry(requirements: Sequence[str], res: Resolution, c: tuple[str, str, str, str],
           index_url: str) -> HeldBack:
    entry, name, chosen, newest = c
    reqs = [*requirements, f"{name}>={newest}"]
    try:
        proc, _ = uv_compile(reqs, res.constraints, res.target, index_url, RETRY_TIMEOUT_S,
                             extra_index=res.extra_index)
    except Unreachable:
        late = f"(not told: the index did not answer within {RETRY_TIMEOUT_S:.0f} s)"
        return HeldBack(entry, name, chosen, newest, late, "")
    if proc.returncode == 0:  # uv's preference, not a clash: the newest fits too
        return HeldBack(entry, name, chosen, newest, "nothing: it resolves with the newest too", "")
    if "No solution found" not in proc.stderr:
        first = next((ln for ln in proc.stderr.splitlines() if ln.startswith("error")), "")
        return HeldBack(entry, name, chosen, newest, f"(not told: {first or 'uv failed'})", "")
    others = [r for r in requirements if r != entry]
    _, _, steps = explain_clash(proc.stderr, [*others, reqs[-1]], res.constraints)
    who, key, _ = explain_clash(proc.stderr, others, res.constraints)
    return HeldBack(entry, name, chosen, newest, who, key, steps)


def _entries_above(name: str, res: Resolution, direct: Mapping[str, str]) -> list[str]:
    """The recipe entries whose requirements pull ``name`` in (uv's via, walked upward)."""
    via = {c.name: c.via for c in res.compiled}
    seen, todo, found = {name}, [name], []
    while todo:
        n = todo.pop()
        if n in direct:
            found.append(direct[n])
        for up in via.get(n, ()):
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return sorted(found)


def _chain(log: ResolverLog, res: Resolution, c: tuple[str, str, str, str],
           direct: Mapping[str, str]) -> HeldBack | None:
    """The held-back entry's clash read from the first resolution's log: the newest version's
    requirement on a package, the requirers of that package in the resolution whose ranges
    leave no version the index has for both, and the recipe entries above them. None when the
    log does not show it whole (then uv is asked once more)."""
    entry, name, chosen, newest = c
    env = marker_env(res.target)
    chosen_of = {p.name: p.version for p in res.packages}
    via = {x.name: x.via for x in res.compiled}
    for on in log.clashed_on.get((name, newest), ()):
        need = log.requirements_on(name, newest, on, env)
        if not need:
            continue
        head = f"{entry!r} -> {name} {newest} requires {need[0].text()}"
        if on in res.constraints:
            v = Version(res.constraints[on])
            if not all(r.allows(v) for r in need):
                return HeldBack(entry, name, chosen, newest, f"{on}=={v} (conda)", "",
                                f"{head} -x- {on}=={v} (conda)")
            continue
        page = res.index.get(on)
        if on not in chosen_of or not page:
            continue
        versions = sorted({f.version for f in page.files()})
        for up in via.get(on, ()):
            if up not in chosen_of:
                continue
            theirs = log.requirements_on(up, chosen_of[up], on, env)
            if theirs and clashes(need, theirs, versions):
                entries = _entries_above(up, res, direct)
                if not entries:
                    continue
                who = f"recipe pip entr{'y' if len(entries) == 1 else 'ies'} " + " and ".join(
                    repr(e) for e in entries)
                chain = (f"{head} -x- {theirs[0].text()} required by {up} {chosen_of[up]} <- "
                         + " and ".join(repr(e) for e in entries))
                return HeldBack(entry, name, chosen, newest, who, "", chain)
    return None


def marker_env(target: Target) -> dict[str, str]:
    """The PEP 508 marker values of the target (linux only; elsewhere markers read true)."""
    machine = {"x86_64": "x86_64", "aarch64": "aarch64", "ppc64le": "ppc64le"}
    arch = target.uv_platform.split("-", 1)[0]
    return {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "platform_machine": machine.get(arch, arch), "python_version": target.python,
            "python_full_version": f"{target.python}.0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""} if target.glibc else {}


def held_back(requirements: Sequence[str], res: Resolution, index_url: str) -> list[HeldBack]:
    """Every held-back direct entry: its clash read from the resolution's log where it shows
    it whole, else from one more uv resolution each (in parallel)."""
    todo = candidates(requirements, res)
    if not todo:
        return []
    log = ResolverLog.read(res.log)
    direct = {requirement_name(r): r for r in requirements}
    told = {c: _chain(log, res, c, direct) for c in todo}
    rest = [c for c in todo if told[c] is None]
    if rest:
        with ThreadPoolExecutor(len(rest)) as pool:
            told.update(zip(rest, pool.map(lambda c: _retry(requirements, res, c, index_url),
                                           rest)))
    return [h for c in todo if (h := told[c]) is not None]


def resolve_pip_noting_held_back(
    recipe: Recipe, solved: Sequence[SolvedPackage], platform: str, index_url: str = PYPI
) -> tuple[list[PipPackage], list[str]]:
    """The recipe's pip entries resolved on top of its conda solve for ``platform``, and a
    line for each direct entry the resolution held back."""
    requirements = list(recipe.pip)
    if not requirements:
        return [], []
    res = resolve(requirements, solved, platform, recipe.system, index_url=index_url,
                  extra_index=recipe.pip_extra_index)
    return list(res.packages), [h.line() for h in held_back(requirements, res, index_url)]
