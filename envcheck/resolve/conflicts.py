"""Find the smallest set of recipe entries that cannot be installed together, and say why.

What people do by hand (drop packages one by one until the solve works) done with a
binary search over the recipe's entries: every probe is a real solve through the
injected ``solve`` function, so this module holds no solver and is tested against real
solves of generated channels.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rattler import MatchSpec


@dataclass(frozen=True)
class SolveOutcome:
    """One solve's verdict: ``ok``, or the solver's full text saying why not.

    A solve that could not run at all (channel missing, timeout) must raise instead:
    only "no solution exists" may be answered with ``ok=False``.
    """

    ok: bool
    message: str = ""


@dataclass(frozen=True)
class Diagnosis:
    """The smallest set of entries that cannot be installed together, and why."""

    entries: tuple[str, ...]
    reasons: tuple[str, ...]
    solver_message: str  # the solver's text for exactly ``entries``
    solves: int  # real solves spent, the first (whole recipe) included
    seconds: float

    def summary(self) -> str:
        if len(self.entries) == 1:
            head = f"recipe entry {self.entries[0]!r} cannot be installed"
        else:
            head = "recipe entries " + ", ".join(repr(e) for e in self.entries)
            head += " cannot be installed together"
        return head + (": " + "; ".join(self.reasons) if self.reasons else "")


class NothingToDiagnose(ValueError):
    """The specs solve: there is no conflict to explain."""


@dataclass
class _Prober:
    """Counts real solves; never solves the same set twice."""

    solve: Callable[[Sequence[str]], SolveOutcome]
    outcomes: dict[frozenset[str], SolveOutcome] = field(default_factory=dict)
    solves: int = 0

    def fails(self, specs: Sequence[str]) -> bool:
        key = frozenset(specs)
        if not key:
            return False  # nothing asked, nothing to clash: no solve needed
        if key not in self.outcomes:
            self.solves += 1
            self.outcomes[key] = self.solve(list(specs))
        return not self.outcomes[key].ok


def minimal_conflict(entries: Sequence[str], fails: Callable[[Sequence[str]], bool]) -> list[str]:
    """A minimal subset of ``entries`` for which ``fails`` holds (``fails(entries)`` must).

    Round 1 binary-searches the shortest failing prefix: its last entry belongs to the
    conflict. Each later round keeps what was found and searches the prefix before the
    last find again, until what was found fails on its own. Solving only ever gets
    harder when specs are added, which is what makes the bisection valid.
    For one culprit pair among n entries this costs at most 2*ceil(log2 n) + 1 probes.
    """
    found: list[str] = []
    candidates = list(entries)
    while True:
        # answers: i in [lo+1, hi] = shortest prefix of candidates that fails with found
        if not found:
            lo = 0  # the empty set always solves
        elif len(found) == 1:
            lo = -1  # the single find may fail alone: let the search decide
        else:
            # Most conflicts are pairs: ask whether what we have is enough before
            # searching again (one probe instead of a log2 n search).
            if fails(found):
                return _in_order(found, entries)
            lo = 0
        hi = len(candidates)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fails(found + candidates[:mid]):
                hi = mid
            else:
                lo = mid
        if hi == 0:
            return _in_order(found, entries)
        found.append(candidates[hi - 1])
        candidates = candidates[: hi - 1]
        if not candidates:
            return _in_order(found, entries)


def _in_order(found: Sequence[str], entries: Sequence[str]) -> list[str]:
    return [e for e in entries if e in set(found)]


def diagnose(
    specs: Sequence[str],
    solve: Callable[[Sequence[str]], SolveOutcome],
    *,
    virtual_packages: Mapping[str, str] | None = None,
    guided: bool = True,
) -> Diagnosis:
    """Bisect ``specs`` with real solves down to a minimal clash, then explain it.

    ``virtual_packages`` maps names such as ``__glibc`` to the versions the target
    system provides (the recipe's ``system``), so a clash with the host can be named.
    With ``guided``, the entries the solver's message names are tried first: when they
    fail together the bisection runs over them only (4 solves for a pair named alone);
    otherwise it runs over every entry, one solve later. Raises NothingToDiagnose when
    ``specs`` solve.
    """
    start = time.perf_counter()
    entries = list(dict.fromkeys(specs))  # a repeated entry cannot be the culprit twice
    prober = _Prober(solve)
    if not prober.fails(entries):
        raise NothingToDiagnose("the recipe's dependencies solve; there is no conflict")
    pool = entries
    if guided:
        named = {n.name for n in _walk(parse_message(prober.outcomes[frozenset(entries)].message))}
        by_name = _entry_names(entries)
        guess = [e for e in entries if by_name.get(_name_of(e)) == e and _name_of(e) in named]
        if guess and len(guess) < len(entries) and prober.fails(guess):
            pool = guess
    culprits = minimal_conflict(pool, prober.fails)
    outcome = prober.outcomes.get(frozenset(culprits))
    if outcome is None:  # every path above probes the final set, but stay correct anyway
        prober.fails(culprits)
        outcome = prober.outcomes[frozenset(culprits)]
    reasons = explain(culprits, outcome.message, virtual_packages or {})
    return Diagnosis(
        entries=tuple(culprits),
        reasons=tuple(reasons),
        solver_message=outcome.message,
        solves=prober.solves,
        seconds=time.perf_counter() - start,
    )


# --- reading the solver's message -------------------------------------------------------

_PREFIX = re.compile(r"^(?:[│├└─ ]{3})*")
_KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("missing", re.compile(r"^No candidates were found for (?P<name>\S+) (?P<spec>.+?)\.?$")),
    (
        "missing",
        re.compile(r"^(?P<name>\S+) (?P<spec>.+?), for which no candidates were found\.?$"),
    ),
    (
        "dead",
        re.compile(
            r"^(?P<name>\S+) (?P<spec>.+?),? (?:which )?cannot be installed because there are "
            r"no viable options:?$"
        ),
    ),
    (
        "alive",
        re.compile(
            r"^(?P<name>\S+) (?P<spec>.+?),? (?:which )?can be installed with any of the "
            r"following options:?$"
        ),
    ),
    ("requires", re.compile(r"^(?P<name>\S+) (?P<spec>\S+) would require$")),
    ("constrains", re.compile(r"^(?P<name>\S+) (?P<spec>\S+) would constrain$")),
    (
        "clash",
        re.compile(r"^(?P<name>\S+) (?P<spec>\S+), which conflicts with (?:the|any) .*$"),
    ),
    ("candidate", re.compile(r"^(?P<name>\S+) (?P<spec>\S+)$")),
]


@dataclass
class _Node:
    kind: str
    name: str
    spec: str
    text: str
    depth: int
    children: list[_Node] = field(default_factory=list)
    parent: _Node | None = None


def parse_message(message: str) -> list[_Node]:
    """The solver's conflict tree as nodes (roots returned); unknown lines kept as 'other'."""
    body = message.split("because of:", 1)[-1]
    lines = [ln.rstrip() for ln in body.splitlines() if ln.strip()]
    roots: list[_Node] = []
    stack: list[_Node] = []
    for line in lines:
        prefix = _PREFIX.match(line)
        depth = len(prefix.group(0)) // 3 if prefix else 0
        text = line[len(prefix.group(0)) if prefix else 0 :].strip()
        if text == "The following packages are incompatible":
            continue
        node = _classify(text, depth)
        while stack and stack[-1].depth >= depth:
            stack.pop()
        if stack:
            node.parent = stack[-1]
            stack[-1].children.append(node)
        else:
            roots.append(node)
        stack.append(node)
    return roots


def _classify(text: str, depth: int) -> _Node:
    for kind, pattern in _KINDS:
        m = pattern.match(text)
        if m:
            return _Node(kind, m.group("name"), m.group("spec").strip(), text, depth)
    return _Node("other", "", "", text, depth)


def _walk(nodes: list[_Node]):
    for n in nodes:
        yield n
        yield from _walk(n.children)


def _chain(node: _Node) -> list[_Node]:
    """The 'X v would require' candidates from the root down to ``node``."""
    out: list[_Node] = []
    cur = node.parent
    while cur is not None:
        if cur.kind in ("requires", "constrains"):
            out.append(cur)
        cur = cur.parent
    return out[::-1]


def _name_of(entry: str) -> str | None:
    try:
        ms = MatchSpec(entry)
    except Exception:  # noqa: BLE001 - a spec the solver took but we cannot name: skip it
        return None
    return ms.name.normalized if ms.name is not None else None


def _entry_names(entries: Sequence[str]) -> dict[str, str]:
    """package name -> the recipe entry that asks for it."""
    names: dict[str, str] = {}
    for e in entries:
        name = _name_of(e)
        if name is not None:
            names.setdefault(name, e)
    return names


def _requirement(node: _Node) -> str:
    return f"{node.name} {node.spec}"


def _path_text(node: _Node) -> str:
    """'cuml 22.8.0 requires cudf 22.8.0, which requires dask ==2022.7.1'."""
    chain = _chain(node)
    if not chain:
        return _requirement(node)
    text = f"{chain[0].name} {chain[0].spec}"
    for step in chain[1:]:
        text += f" requires {step.name} {step.spec}, which"
    verb = "constrains" if chain[-1].kind == "constrains" else "requires"
    return f"{text} {verb} {_requirement(node)}"


def explain(entries: Sequence[str], message: str, virtual_packages: Mapping[str, str]) -> list[str]:
    """Lines naming the clashing requirements in recipe terms, read from the solver's tree."""
    roots = parse_message(message)
    names = _entry_names(entries)
    # what each branch that *can* be installed requires: the other side of a clash
    wanted: dict[str, list[_Node]] = {}
    for n in _walk(roots):
        if n.kind in ("alive", "dead", "missing") and n.parent is not None:
            wanted.setdefault(n.name, []).append(n)
    reasons: list[str] = []
    for n in _walk(roots):
        reason = None
        if n.kind == "missing":
            reason = _why_missing(n, names, virtual_packages)
        elif n.kind == "clash":
            reason = _why_clash(n, names, wanted)
        if reason and reason not in reasons:
            reasons.append(reason)
    if not reasons:
        # a message shape we do not know: say the solver's first line rather than nothing
        first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
        if first:
            reasons.append(first)
    return reasons


def _why_missing(n: _Node, names: Mapping[str, str], vp: Mapping[str, str]) -> str:
    if n.parent is None:  # a recipe entry that matches nothing in the channels
        entry = names.get(n.name, _requirement(n))
        return f"no package in the channels matches {entry!r}"
    path = _path_text(n)
    if n.name.startswith("__"):
        have = vp.get(n.name)
        if have is None:
            return f"{path}; the target system (recipe 'system') provides no {n.name}"
        return f"{path}; the target system (recipe 'system') provides {n.name} {have}"
    entry = names.get(n.name)
    if entry is not None:
        return f"{path}; the recipe pins {entry}"
    return f"{path}; no package in the channels satisfies it"


def _why_clash(n: _Node, names: Mapping[str, str], wanted: Mapping[str, list[_Node]]) -> str:
    # the clashing candidate's parent is the requirement that wanted it
    parent = n.parent
    req = parent if parent is not None and parent.kind not in ("requires", "constrains") else n
    path = _path_text(req)
    entry = names.get(n.name)
    others = [w for w in wanted.get(n.name, []) if w is not req and w.kind == "alive" and _chain(w)]
    if others:
        return f"{path}; but {_path_text(others[0])}"
    if entry is not None:
        return f"{path}; the recipe pins {entry}"
    return f"{path}, which conflicts with another requirement"
