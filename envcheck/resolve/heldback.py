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
from envcheck.resolve.pip import PYPI, Resolution, explain_clash, resolve, uv_compile
from envcheck.resolve.pypi_index import newest_installable
from envcheck.resolve.solve import SolvedPackage

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

    def line(self) -> str:
        why = f"{self.held_by}" + (f" (uv: {self.key})" if self.key else "")
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
           index_url: str) -> HeldBack:  # fmt: skip
    entry, name, chosen, newest = c
    reqs = [*requirements, f"{name}>={newest}"]
    try:
        proc = uv_compile(reqs, res.constraints, res.target, index_url, RETRY_TIMEOUT_S)
    except Unreachable:
        late = f"(not told: the index did not answer within {RETRY_TIMEOUT_S:.0f} s)"
        return HeldBack(entry, name, chosen, newest, late, "")
    if proc.returncode == 0:  # uv's preference, not a clash: the newest fits too
        return HeldBack(entry, name, chosen, newest, "nothing: it resolves with the newest too", "")
    if "No solution found" not in proc.stderr:
        first = next((ln for ln in proc.stderr.splitlines() if ln.startswith("error")), "")
        return HeldBack(entry, name, chosen, newest, f"(not told: {first or 'uv failed'})", "")
    others = [r for r in requirements if r != entry]
    who, key = explain_clash(proc.stderr, others, res.constraints)
    return HeldBack(entry, name, chosen, newest, who, key)


def held_back(requirements: Sequence[str], res: Resolution, index_url: str) -> list[HeldBack]:
    """Every held-back direct entry, the retries run in parallel (one uv process each)."""
    todo = candidates(requirements, res)
    if not todo:
        return []
    with ThreadPoolExecutor(len(todo)) as pool:
        return list(pool.map(lambda c: _retry(requirements, res, c, index_url), todo))


def resolve_pip_noting_held_back(
    requirements: Sequence[str],
    solved: Sequence[SolvedPackage],
    platform: str,
    system: Mapping[str, str],
    *,
    index_url: str = PYPI,
) -> tuple[list[PipPackage], list[str]]:
    """resolve_pip, and a line for each direct entry the resolution held back."""
    if not requirements:
        return [], []
    res = resolve(requirements, solved, platform, system, index_url=index_url)
    return list(res.packages), [h.line() for h in held_back(requirements, res, index_url)]
