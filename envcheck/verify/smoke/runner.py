"""One smoke test in a daemon thread under its deadline: a test that hangs is a failure, a
worker that leaves the cluster under it is an error naming it (and the skew found on it), and
what the test said of the other workers stays."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from envcheck.record import replace
from envcheck.report import Result, Status
from envcheck.text import first_line
from envcheck.verify.facts import NodeFacts
from envcheck.verify.smoke.run import (
    POLL,
    SmokeRun,
    SmokeTest,
    SmokeTimeout,
    WorkerLost,
    lost_workers,
    result,
)

# The body gets this much longer than its own deadline to return before the runner gives up on
# it: a body that waits with SmokeRun's helpers reports *which* step timed out.
_GRACE = 2.0


def _is_cluster_failure(exc: BaseException) -> bool:
    """A dead worker or lost connection is an error of the run, not a failure of the stack."""
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    return isinstance(exc, (KilledWorker, CommClosedError))


def _lost_results(test: str, workers: list[str],
                  skewed: Mapping[str, tuple[str, ...]]) -> list[Result]:
    """An error per worker that left the cluster during ``test``, blaming the skew already
    found on it where there is one."""
    out = []
    for a in workers:
        if skewed.get(a):
            found = ", ".join(skewed[a])
            out.append(result(
                test, Status.ERROR,
                f"worker {a} left the cluster during the test: it fails {found} (above), and a "
                "task from this client likely crashed it (its log says why)", a,
                fix=f"fix {found} first (see its fix), then verify again"))
        else:
            out.append(result(test, Status.ERROR, f"worker {a} left the cluster during the test "
                              "(killed, or out of memory?): its tasks cannot finish", a))
    return out


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
    test: SmokeTest, client: Any, facts: Mapping[str, NodeFacts], timeout: float,
    skewed: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """``test`` on the workers of ``facts`` -> its results. A worker that left the cluster
    meanwhile is an error (blaming the skew ``skewed`` found on it, where there is one); the
    results the test gave for the other workers stay."""
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
    skewed = skewed or {}
    if isinstance(err, WorkerLost):
        return _lost_results(test.id, err.workers, skewed)
    if err is not None and _is_cluster_failure(err):
        return [result(test.id, Status.ERROR, f"{first_line(err)} (after {took:.1f} s)")]
    gone = lost_workers(client, facts)
    if gone:  # what the body said of the workers still there stays; the rest is the loss
        kept = [r for r in box.get("results", ()) if r.node and r.node not in gone]
        return kept + _lost_results(test.id, gone, skewed)
    if alive:
        # A library call (xgboost, torch) that ignores our deadline: leave its daemon thread.
        return [result(test.id, Status.FAIL, f"timed out after {timeout:g} s")]
    if isinstance(err, SmokeTimeout):
        return [result(test.id, Status.FAIL, f"timed out after {timeout:g} s {err}")]
    if err is not None:
        return [result(test.id, Status.FAIL, f"{first_line(err)} (after {took:.1f} s)")]
    return box["results"]


def timed_run(test: SmokeTest, client: Any, workers: Mapping[str, NodeFacts], timeout: float,
              skewed: Mapping[str, tuple[str, ...]] | None = None) -> list[Result]:
    """run_one, each result carrying the test's seconds."""
    started = time.monotonic()
    results = run_one(test, client, workers, timeout, skewed)
    took = time.monotonic() - started
    return [r if r.seconds is not None else dataclasses.replace(r, seconds=took)
            for r in results]


def asked_for(why_not: Result, selected: Collection[str] | None) -> Result:
    """A test named in --smoke that cannot run is a warning saying why, never a quiet skip."""
    if selected is None or why_not.status is not Status.SKIP:
        return why_not
    fix = why_not.fix or "install what it needs on the workers, or leave it out of --smoke"
    return replace(why_not, status=Status.WARN,
                   message=f"asked for (--smoke) but not run: {why_not.message}", fix=fix)


def held_out(test: SmokeTest, held: Mapping[str, tuple[str, ...]]) -> list[Result]:
    """What ``test`` says about the workers held out of the smoke tests for wire skew."""
    if not held:
        return []
    if not test.pinned:
        named = "; ".join(f"{a} fails {', '.join(c)}" for a, c in sorted(held.items()))
        return [result(test.id, Status.SKIP, "not run: it places tasks on any worker, and a "
                       f"task from this client could crash a worker whose versions differ "
                       f"({named})")]
    return [result(test.id, Status.SKIP, f"not run on this worker: it fails {', '.join(c)}, "
                   "so a task from this client could crash it", a)
            for a, c in sorted(held.items())]


class Board:
    """The smoke tests' progress line (envcheck.progress): how many ended, which run now, on
    how many workers: `smoke tests on 64 workers: 3/9 done, running ddp, xgboost`."""

    def __init__(self, tests: int, workers: int, line: Any) -> None:
        self.tests, self.workers, self.line = tests, workers, line
        self.done = 0
        self.now: list[str] = []
        self.lock = threading.Lock()

    def text(self) -> str:
        s = "s" * (self.workers != 1)
        running = f", running {', '.join(self.now)}" if self.now else ""
        return f"smoke tests on {self.workers} worker{s}: {self.done}/{self.tests} done{running}"

    @contextmanager
    def running(self, test: str) -> Iterator[None]:
        with self.lock:
            self.now.append(test)
            self.line.say(self.text())
        try:
            yield
        finally:
            with self.lock:
                self.now.remove(test)
                self.done += 1
                self.line.say(self.text())
