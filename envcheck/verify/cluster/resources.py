"""Worker resources (``dask worker --resources GPU=1``): annotated tasks must land only there.

A real round trip: tasks annotated with ``dask.annotate(resources=...)`` are submitted and
each reports the worker that ran it. Misconfigured resources show up as tasks running on
workers without the resource (or never running at all).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from envcheck.report import Result, Status

if TYPE_CHECKING:
    from distributed import Client

CHECK = "resources"
GROUP = "cluster"


def _make_where() -> Callable[[int], str]:
    # Nested, so cloudpickle ships it by value: the workers need not have envcheck.
    def where(i: int) -> str:
        from distributed import get_worker

        return get_worker().address

    return where


def check_resources(
    client: Client, resources: Mapping[str, Mapping[str, float]], timeout: float
) -> list[Result]:
    """For each advertised resource, 2 tasks per holder annotated with it run only there."""
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
    return [_one(client, name, resources, timeout) for name in names]


def _one(
    client: Client, name: str, resources: Mapping[str, Mapping[str, float]], timeout: float
) -> Result:
    import dask
    from distributed import wait

    holders = sorted(a for a, res in resources.items() if res.get(name, 0) > 0)
    amount = min(resources[a][name] for a in holders)
    n = 2 * len(holders)
    with dask.annotate(resources={name: amount}):
        futures = client.map(_make_where(), range(n), pure=False)
    try:
        with client.as_current():  # wait() looks for "the" client; ours is not the default
            _, not_done = wait(futures, timeout=timeout)
    except TimeoutError:
        not_done = set(futures)
    try:
        if not_done:
            return Result(
                CHECK,
                Status.ERROR,
                f"{len(not_done)} of {n} tasks annotated resources={{{name!r}: {amount:g}}} "
                f"did not finish within {timeout:g} s",
                node=", ".join(holders),
                fix=f"the workers advertising {name} are busy, hung or gone: check their logs",
                group=GROUP,
            )
        ran: list[Any] = []
        for f in futures:
            try:
                ran.append(f.result(timeout=timeout))
            except Exception as e:  # the probe raised on a worker
                return Result(
                    CHECK,
                    Status.ERROR,
                    f"an annotated task failed: {type(e).__name__}: {e}",
                    node=", ".join(holders),
                    group=GROUP,
                )
        strays = sorted(set(ran) - set(holders))
        if strays:
            return Result(
                CHECK,
                Status.FAIL,
                f"tasks annotated resources={{{name!r}: {amount:g}}} ran on "
                f"{', '.join(strays)}, which do not advertise {name}",
                node=", ".join(strays),
                fix="the scheduler ignores the resource: check that the workers' --resources "
                "and the annotations use the same name",
                group=GROUP,
            )
        return Result(
            CHECK,
            Status.PASS,
            f"{n} tasks annotated resources={{{name!r}: {amount:g}}} ran only on the "
            f"{len(holders)} workers advertising it ({len(set(ran))} used)",
            node=", ".join(holders),
            group=GROUP,
        )
    finally:
        client.cancel(futures)
