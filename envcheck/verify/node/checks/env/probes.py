"""The walk shared by checks that read probes collected for named expectations (imports, libraries).

Skip when nothing is expected; one error naming what the facts hold no probe for (facts saved
with other expectations); then each expected name in order: a probe that passed adds a line to
the one pass result put first, a probe that failed adds its own fail result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from envcheck.report import Result, Status

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import TypeVar
    P = TypeVar("P")

NOT_PROBED_FIX = (
    "collect the facts with the same expectations (envcheck verify node --lock/--import/"
    "--library ... --save-facts FILE), or pass the probes to collect_node_facts"
)


def walk_probes(
    check: str,
    expected: Sequence[str],
    probes: Mapping[str, P],
    *,
    nothing: str,
    judge: Callable[[str, P], str | Result],
    summary: Callable[[list[str]], str],
) -> list[Result]:
    """Results of `check` for `expected` names against their `probes`.

    `nothing` is the skip message when no name is expected; `judge(name, probe)` returns the
    pass line of a probe that passed or the fail Result of one that failed; `summary(lines)`
    makes the message of the pass result from the pass lines.
    """
    if not expected:
        return [Result(check, Status.SKIP, nothing)]
    results: list[Result] = []
    ok: list[str] = []
    unprobed = [n for n in expected if n not in probes]
    if unprobed:
        results.append(
            Result(
                check,
                Status.ERROR,
                f"not probed: {', '.join(unprobed)} (facts were collected without them)",
                fix=NOT_PROBED_FIX,
            )
        )
    for name in expected:
        p = probes.get(name)
        if p is None:
            continue
        verdict = judge(name, p)
        if isinstance(verdict, Result):
            results.append(verdict)
        else:
            ok.append(verdict)
    if ok:
        results.insert(0, Result(check, Status.PASS, summary(ok)))
    return results
