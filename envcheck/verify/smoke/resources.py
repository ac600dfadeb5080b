"""Worker resources (``dask worker --resources GPU=1``): annotated tasks must land only there.

A smoke test (it submits tasks): tasks annotated with ``dask.annotate(resources=...)`` are
submitted and each reports the worker that ran it. Misconfigured resources show up as tasks
running on workers without the resource (or never running at all). What each worker
advertises comes from the facts round (NodeFacts.resources).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from envcheck.report import Result, Status

if TYPE_CHECKING:
    from envcheck.verify.smoke.run import SmokeRun

CHECK = "smoke.resources"
GROUP = "smoke"


def _make_where() -> Callable[[int], str]:
    # Nested, so cloudpickle ships it by value: the workers need not have envcheck.
    def where(i: int) -> str:
        from distributed import get_worker

        return get_worker().address

    return where


def smoke_resources(run: SmokeRun) -> list[Result]:
    """For each advertised resource, 2 tasks per holder annotated with it run only there."""
    resources = {a: dict(f.resources) for a, f in run.facts.items()}
    names = sorted({name for res in resources.values() for name, v in res.items() if v > 0})
    if not names:
        return [
            Result(
                CHECK,
                Status.SKIP,
                "no worker advertises resources (e.g. dask worker --resources GPU=1)",
                group=GROUP,
            )
        ]
    return [_one(run, name, resources) for name in names]


def _one(run: SmokeRun, name: str, resources: Mapping[str, Mapping[str, float]]) -> Result:
    import dask

    holders = sorted(a for a, res in resources.items() if res.get(name, 0) > 0)
    amount = min(resources[a][name] for a in holders)
    n = 2 * len(holders)
    with dask.annotate(resources={name: amount}):
        futures = run.track(run.client.map(_make_where(), range(n), pure=False))
    what = f"tasks annotated resources={{{name!r}: {amount:g}}}"
    outcomes = run.outcomes({str(i): f for i, f in enumerate(futures)}, what)
    ran: list[Any] = []
    for value, exc in outcomes.values():
        if exc is not None:  # the probe raised on a worker
            return Result(
                CHECK,
                Status.ERROR,
                f"an annotated task failed: {type(exc).__name__}: {exc}",
                node=", ".join(holders),
                group=GROUP,
            )
        ran.append(value)
    strays = sorted(set(ran) - set(holders))
    if strays:
        return Result(
            CHECK,
            Status.FAIL,
            f"{what} ran on {', '.join(strays)}, which do not advertise {name}",
            node=", ".join(strays),
            fix="the scheduler ignores the resource: check that the workers' --resources "
            "and the annotations use the same name",
            group=GROUP,
        )
    return Result(
        CHECK,
        Status.PASS,
        f"{n} {what} ran only on the {len(holders)} workers advertising it "
        f"({len(set(ran))} used)",
        node=", ".join(holders),
        group=GROUP,
    )
