"""Running one smoke test: its body in a daemon thread, bounded by its timeout (and cut short
when a worker is lost), every way it can end turned into results that carry its seconds."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envcheck.report import Result, Status
from envcheck.text import first_line
from envcheck.verify.facts import NodeFacts
from envcheck.verify.smoke.run import (
    POLL,
    SmokeRun,
    SmokeTimeout,
    WorkerLost,
    lost_workers,
    result,
)

if TYPE_CHECKING:
    from envcheck.verify.smoke.suite import SmokeTest

# The body gets this much longer than its own deadline to return before the runner gives up on
# it: a body that waits with SmokeRun's helpers reports *which* step timed out.
_GRACE = 2.0


def _is_cluster_failure(exc: BaseException) -> bool:
    """A dead worker or lost connection is an error of the run, not a failure of the stack."""
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    return isinstance(exc, (KilledWorker, CommClosedError))


def _lost_results(test: str, workers: list[str]) -> list[Result]:
    return [result(test, Status.ERROR, f"worker {a} left the cluster during the test (killed, "
                   "or out of memory?): its tasks cannot finish", a) for a in workers]


def _join(thread: threading.Thread, client: Any, facts: Mapping[str, NodeFacts],
          limit: float) -> None:
    """Wait for the body up to `limit` s, or _GRACE s after a worker was lost (a library call
    that waits for a dead worker would take the whole limit)."""
    deadline, lost_at = time.monotonic() + limit, None
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(max(0.0, min(POLL, deadline - time.monotonic())))
        if thread.is_alive() and lost_at is None and lost_workers(client, facts):
            lost_at = time.monotonic()
            deadline = min(deadline, lost_at + _GRACE)


def run_one(
    test: SmokeTest, client: Any, facts: Mapping[str, NodeFacts], timeout: float
) -> list[Result]:
    run = SmokeRun(client, facts, timeout)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            # Libraries such as xgboost.dask look for "the" client; make it ours in this thread.
            with client.as_current():
                box["results"] = test.body(run)
        except BaseException as exc:  # reported below, as a result
            box["error"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=target, name=f"envcheck-smoke-{test.id}", daemon=True)
    thread.start()
    _join(thread, client, facts, timeout + _GRACE)
    alive = thread.is_alive()  # read before the box: a body ending now has filled it
    took = time.monotonic() - started
    err = box.get("error")
    run.release()
    if isinstance(err, WorkerLost):
        return _lost_results(test.id, err.workers)
    if err is not None and _is_cluster_failure(err):
        return [result(test.id, Status.ERROR, f"{first_line(err)} (after {took:.1f} s)")]
    gone = lost_workers(client, facts)
    if gone:  # whatever the body said, it ran on a cluster that lost workers under it
        return _lost_results(test.id, gone)
    if alive:
        # A library call (xgboost, torch) that ignores our deadline: leave its daemon thread.
        return [result(test.id, Status.FAIL, f"timed out after {timeout:g} s")]
    if isinstance(err, SmokeTimeout):
        return [result(test.id, Status.FAIL, f"timed out after {timeout:g} s {err}")]
    if err is not None:
        return [result(test.id, Status.FAIL, f"{first_line(err)} (after {took:.1f} s)")]
    return box["results"]


def timed_run(test: SmokeTest, client: Any, workers: Mapping[str, NodeFacts],
              timeout: float) -> list[Result]:
    """run_one, each result carrying the test's seconds."""
    started = time.monotonic()
    results = run_one(test, client, workers, timeout)
    took = time.monotonic() - started
    return [r if r.seconds is not None else dataclasses.replace(r, seconds=took)
            for r in results]
