"""What a smoke test's body runs with: the client, the workers' facts, and waits bounded by one
deadline that notice workers leaving the cluster."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from envcheck.report import Result, Status
from envcheck.verify.facts import NodeFacts
from envcheck.verify.smoke import ddp
from envcheck.verify.smoke import tasks as worker_tasks

GROUP = "smoke"


def check_id(test: str) -> str:
    """A smoke test's check id: what --skip takes and the report carries ("smoke.submit")."""
    return f"{GROUP}.{test}"


def result(test: str, status: Status, message: str, node: str = "", fix: str = "") -> Result:
    return Result(check_id(test), status, message, node=node, fix=fix, group=GROUP)


POLL = 0.5  # how often a wait looks for workers that left the cluster


class SmokeTimeout(Exception):
    """A smoke test's deadline passed while it waited for the cluster."""


class WorkerLost(Exception):
    """Workers the test runs on left the cluster (killed, out of memory) while it waited."""

    def __init__(self, workers: list[str]) -> None:
        super().__init__(", ".join(workers))
        self.workers = workers


def lost_workers(client: Any, expected: Iterable[str]) -> list[str]:
    """Those of `expected` the scheduler no longer lists ([] when it cannot be asked: a dead
    scheduler is reported elsewhere). The tests ask this every POLL seconds while they wait:
    the scheduler's plain address -> threads list, not its identity of every worker (whose
    metrics and state cost the scheduler and the client a few times more at each ask, for
    every worker)."""
    try:
        now = client.nthreads()
    except Exception:
        return []
    return sorted(set(expected) - set(now))


class SmokeRun:
    """What a test body gets: the client, the workers' facts, and waits bounded by one deadline."""

    def __init__(self, client: Any, facts: Mapping[str, NodeFacts], timeout: float) -> None:
        self.client = client
        self.facts = dict(facts)
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self._futures: list[Any] = []
        self._where: dict[Any, str] = {}  # future key -> the worker it was pinned to

    @property
    def workers(self) -> list[str]:
        return sorted(self.facts)

    @property
    def gpu_workers(self) -> list[str]:
        return sorted(a for a, f in self.facts.items() if ddp.is_gpu_worker(f))

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def track(self, futures: Iterable[Any]) -> list[Any]:
        futures = list(futures)
        self._futures.extend(futures)
        return futures

    def submit(self, fn: Callable[..., Any], *args: Any, worker: str) -> Any:
        """Run ``fn`` (from worker_tasks, shipped by value) on exactly ``worker``."""
        fut = self.client.submit(
            worker_tasks.shipped(fn),
            *args,
            workers=[worker],
            allow_other_workers=False,
            pure=False,
        )
        self._where[fut.key] = worker
        return self.track([fut])[0]

    def outcomes(self, futures: Mapping[str, Any], what: str) -> dict[str, tuple[Any, Any]]:
        """Wait for all; name -> (value, None) or (None, exception). Raises SmokeTimeout, or
        WorkerLost as soon as one of the run's workers has left the cluster, unless every
        future was pinned to a worker: then the others' outcomes come back once they are
        done, with WorkerLost for each future of a worker that left."""
        from distributed import wait

        while True:
            try:
                with self.client.as_current():  # wait() finds its client there
                    wait(list(futures.values()), timeout=max(min(self.remaining(), POLL), 0.01))
                break
            except (TimeoutError, asyncio.TimeoutError):  # distinct before Python 3.11
                if self.remaining() > 0:
                    # a killed worker's pinned tasks wait for it for ever: say so now
                    gone = lost_workers(self.client, self.facts)
                    if gone and not self._settle(futures):
                        if not self._pinned(futures):
                            raise WorkerLost(gone) from None
                        if self._others_done(futures, gone):
                            return self._collect(futures, gone)
                    continue
            pending = [f for f in futures.values() if not f.done()]
            where = sorted({self._where.get(f.key, "") for f in pending} - {""})
            if where:
                raise SmokeTimeout(f"waiting for {what} on {', '.join(where)}")
            unfinished = f"{len(pending)} of {len(futures)} tasks unfinished"
            raise SmokeTimeout(f"waiting for {what} ({unfinished})")
        return self._collect(futures, [])

    def _pinned(self, futures: Mapping[str, Any]) -> bool:
        """Whether every future was pinned to one worker (SmokeRun.submit)."""
        return all(f.key in self._where for f in futures.values())

    def _others_done(self, futures: Mapping[str, Any], gone: list[str]) -> bool:
        return all(f.done() for f in futures.values() if self._where.get(f.key) not in gone)

    def _collect(self, futures: Mapping[str, Any], gone: list[str]) -> dict[str, tuple[Any, Any]]:
        """name -> (value, None) or (None, exception); a future pinned to a worker of ``gone``
        that has not finished is (None, WorkerLost)."""
        out: dict[str, tuple[Any, Any]] = {}
        for name, fut in futures.items():
            where = self._where.get(fut.key)
            if where in gone and not fut.done():
                out[name] = (None, WorkerLost([where]))
            elif fut.status == "error":
                out[name] = (None, fut.exception())
            else:
                out[name] = (fut.result(), None)
        return out

    def _settle(self, futures: Mapping[str, Any]) -> bool:
        """Whether the futures end within one more poll (the scheduler marks a dead worker's
        tasks erred, e.g. KilledWorker, right after it drops the worker: that is the better
        report)."""
        from distributed import wait

        try:
            with self.client.as_current():
                wait(list(futures.values()), timeout=POLL)
        except (TimeoutError, asyncio.TimeoutError):
            return False
        return True

    def values(self, futures: list[Any], what: str) -> list[Any]:
        """Wait for every future and return their values; the first task error is raised."""
        outs = self.outcomes({str(i): f for i, f in enumerate(futures)}, what)
        for _, exc in outs.values():
            if exc is not None:
                raise exc
        return [outs[str(i)][0] for i in range(len(futures))]

    def release(self) -> None:
        """Cancel what is still running and forget the rest, so no test leaves work behind."""
        if not self._futures:
            return
        # a dead scheduler must not turn a clean result into a crash
        with contextlib.suppress(Exception):
            self.client.cancel(self._futures, force=True)
        self._futures.clear()


@dataclass(frozen=True)
class SmokeTest:
    id: str
    summary: str
    body: Callable[[SmokeRun], list[Result]]
    # Each entry is satisfied by any one of its package stems (see needs.package_version).
    worker_packages: tuple[tuple[str, ...], ...] = ()
    client_modules: tuple[str, ...] = ()  # what the client imports to build the graph
    gpu: bool = False  # runs only on GPU workers; skipped when there are none
    # every task it submits is pinned to the run's workers; False: a library places tasks on
    # any worker of the cluster (it does not run while a worker is held out, run_smoke)
    pinned: bool = True
    # a collective over every worker (a process group, xgboost's tracker): runs by itself,
    # after the others, which run at once (each waits on its own tasks)
    alone: bool = False
