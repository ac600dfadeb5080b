"""Facts from every process of a cluster in one parallel round: client, scheduler, workers.

The collector goes to the scheduler and workers *by value*: the facts package's sources,
installed there by verify/shipping.py's load_facts, which cloudpickle ships by value. So they
need only the standard library (and optionally pynvml), not envcheck.

One round trip: the client asks the scheduler once; the scheduler fans out to every worker
at the same time, each call under its own deadline, so a dead or hung worker becomes an
`error` Result naming it while the others still report, and collects its own facts. The
client collects its own facts meanwhile. Workers are asked by the sources' digest and get
the sources only when they have not loaded them yet; each process answers with one JSON
string. Timings and what was tried: BENCHMARKS.md, "verify cluster".
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from envcheck.report import Result, Status
from envcheck.verify.across.processes import ClusterFacts
from envcheck.verify.bounded import Unreadable, facts_of, read_facts
from envcheck.verify.facts import NodeFacts, collect_node_facts
from envcheck.verify.scheduler_info import all_workers_info
from envcheck.verify.shipping import Payload, facts_payload, load_facts

if TYPE_CHECKING:
    from distributed import Client

GROUP = "cluster"


@dataclass(frozen=True)
class CollectOptions:
    """Keyword arguments for collect_node_facts on every process (the probes a lock asks for)."""

    import_modules: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    probe_timeout: float = 60.0
    health: bool | None = None  # collect_node_facts' default: workers yes, client/scheduler no

    @property
    def probes(self) -> bool:
        return bool(self.import_modules or self.libraries)

    def kwargs(self) -> dict[str, Any]:
        out = {
            "import_modules": tuple(self.import_modules),
            "libraries": tuple(self.libraries),
            "probe_timeout": self.probe_timeout,
        }
        if self.health is not None:
            out["health"] = self.health
        return out


def _make_runner() -> Callable[..., Any]:
    # Nested functions are never importable by name, so cloudpickle ships them by value (a few
    # hundred bytes). They need only the standard library where they run.
    # The loader travels inside the runner (nested in verify/shipping.py, so by value too).
    load = load_facts

    async def run_facts(
        digest: str,
        source: bytes,
        role: str,
        kwargs: dict,
        dask_worker: Any = None,
        dask_scheduler: Any = None,
    ) -> bytes:
        import asyncio

        server = dask_worker if dask_worker is not None else dask_scheduler
        address = getattr(server, "address", "") or ""

        # Loaded once per process and kept: later rounds skip the compile, and NVML stays
        # initialised between rounds as the package intends. The digest keeps versions apart.
        module = load(digest, source)
        if module is None:
            return b""  # "send the sources": this process has not loaded this version yet

        def collect() -> bytes:

            facts = module.collect_node_facts(role, address, **kwargs)
            module._envcheck_last_seconds = facts.collect_seconds
            # One JSON string, not a dict: Dask serializes a nested dict of a few hundred
            # strings element by element (headers and frames for each), and that cost as
            # much as the collection itself at every hop (worker, scheduler, client).
            return json.dumps(module.facts_to_dict(facts), separators=(",", ":")).encode()

        # Import probes, `ucx_info` and a first scan can take seconds, and the event loop must
        # keep the worker's heartbeats going meanwhile: those run in a thread. A collection
        # that was quick last time (cached scans, no probes) runs right here: on a busy
        # process the thread would wait up to one GIL switch interval to start.
        quick = getattr(module, "_envcheck_last_seconds", 1.0) < 0.005
        if quick and not kwargs.get("import_modules") and not kwargs.get("libraries"):
            return collect()
        return await asyncio.get_running_loop().run_in_executor(None, collect)

    return run_facts


def _make_worker_asker() -> Callable[..., Any]:
    """``one(dask_scheduler, address, by_digest, with_source, deadline)``: one worker's facts
    or why it sent none. Nested, so cloudpickle ships it by value with fan_out."""

    def failure(kind: str, text: str) -> dict:
        return {"error": kind, "text": text[:500]}

    def result_of(reply: dict) -> Any:
        from distributed.protocol import deserialize

        result = reply["result"]
        if hasattr(result, "header") and hasattr(result, "frames"):  # still serialized
            result = deserialize(result.header, result.frames)
        return result

    async def ask(dask_scheduler: Any, address: str, by_digest: dict, with_source: dict) -> dict:
        replies = await dask_scheduler.broadcast(
            msg=by_digest, workers=[address], on_error="return_pickle"
        )
        reply = replies.get(address)
        if isinstance(reply, dict) and reply.get("status") == "OK":
            result = result_of(reply)
            replies = {**replies, address: {**reply, "result": result}}
            if result == b"":
                replies = await dask_scheduler.broadcast(
                    msg=with_source, workers=[address], on_error="return_pickle"
                )
        return replies

    async def one(
        dask_scheduler: Any, address: str, by_digest: dict, with_source: dict, deadline: float
    ) -> dict:
        import asyncio

        from distributed.protocol.pickle import loads

        try:
            replies = await asyncio.wait_for(
                ask(dask_scheduler, address, by_digest, with_source), deadline
            )
        except (asyncio.TimeoutError, TimeoutError):
            if address not in dask_scheduler.workers:  # refused until it was removed
                return failure("lost", "it left the cluster while being asked")
            return failure("timeout", "")
        reply = replies.get(address)
        if reply is None:
            return failure("lost", "the scheduler no longer lists it")
        if isinstance(reply, (bytes, bytearray)):  # the call failed on the way
            exc = loads(reply)
            # A dead connection is "lost"; anything else was raised by the worker, e.g.
            # while unpickling our runner with another cloudpickle.
            kind = "lost" if isinstance(exc, (OSError, EOFError)) else "raised"
            return failure(kind, f"{type(exc).__name__}: {exc}")
        if reply.get("status") != "OK":
            return failure("raised", str(reply.get("exception_text", "unknown error")))
        return {"facts": result_of(reply)}

    return one


def _make_fan_out() -> Callable[..., Any]:
    one = _make_worker_asker()

    async def fan_out(
        runner: bytes,
        digest: str,
        source: bytes,
        kwargs: dict,
        deadline: float,
        dask_scheduler: Any = None,
    ) -> dict:
        """On the scheduler: its own facts and every worker's, each within deadline."""
        import asyncio
        import inspect

        from distributed.protocol.pickle import dumps, loads

        workers = {
            address: dict(getattr(ws, "resources", None) or {})
            for address, ws in dask_scheduler.workers.items()
        }

        def message(with_source: bool) -> dict:
            return {
                "op": "run",
                "function": runner,
                "args": dumps((digest, source if with_source else b"", "worker", kwargs)),
                "kwargs": dumps({}),
                "wait": True,
            }

        # By digest first: a worker that loaded this facts package in an earlier round (they
        # live long) needs only the digest; one that has not answers b"" and gets the sources.
        # This saves sending ~20 KB to every worker in every round.
        by_digest, with_source = message(False), message(True)

        async def own() -> dict:
            try:
                facts = loads(runner)(
                    digest, source, "scheduler", kwargs, dask_scheduler=dask_scheduler
                )
                if inspect.isawaitable(facts):
                    facts = await asyncio.wait_for(facts, deadline)
                return {"facts": facts}
            except (asyncio.TimeoutError, TimeoutError):
                return {"error": "timeout", "text": ""}
            except Exception as e:
                return {"error": "raised", "text": f"{type(e).__name__}: {e}"[:500]}

        addresses = sorted(workers)
        # Workers first: their requests go out before the scheduler's own collection, which
        # may run right on this event loop, holds it.
        replies = await asyncio.gather(
            *(one(dask_scheduler, a, by_digest, with_source, deadline) for a in addresses), own()
        )
        return {
            "scheduler": replies[-1],
            "workers": dict(zip(addresses, replies[:-1])),
            "resources": workers,
        }

    return fan_out


_RUNNER = _make_runner()
_FAN_OUT = _make_fan_out()


@functools.lru_cache(maxsize=4)
def _pickled(fn: Callable[..., Any]) -> bytes:
    from distributed.protocol.pickle import dumps

    return dumps(fn)


def gather_facts(
    client: Client,
    timeout: float,
    options: CollectOptions = CollectOptions(),
    runner: Callable[..., Any] | None = None,
) -> ClusterFacts:
    """One round: every worker and the scheduler remotely, the client here, all at once.

    Each worker must answer within `timeout` (plus the probe timeout when import/library
    probes run in child processes); what does not is reported, never waited for. `runner`
    replaces the function the workers run (tests pass one that raises).
    """
    t0 = time.perf_counter()
    deadline = timeout + (options.probe_timeout if options.probes else 0.0)
    payload = facts_payload()
    kwargs = options.kwargs()
    args = (_pickled(runner or _RUNNER), payload.digest, payload.source, kwargs, deadline)
    # The request goes out on the client's event loop; this thread collects the client's own
    # facts meanwhile (no thread to start, no GIL hand-over to wait for), then waits.
    asked = asyncio.run_coroutine_threadsafe(
        _on_scheduler(client, args, deadline + timeout), client.loop.asyncio_loop
    )
    client_facts = collect_node_facts("client", "", **kwargs)
    try:
        reply = asked.result()
    except Exception as e:  # the scheduler itself hung, died or refused
        reply = {"scheduler": {"error": _kind(e), "text": f"{type(e).__name__}: {e}"}}
        if _kind(e) == "raised":
            # It answered but will not run our code (blocked-handlers: run_function):
            # ask the workers directly, in one broadcast without per-worker deadlines.
            reply.update(_direct(client, runner or _RUNNER, payload, kwargs, deadline))
    scheduler_address = getattr(client.scheduler, "address", "") or ""
    errors: list[Result] = []
    scheduler_facts = _decode("scheduler", scheduler_address, reply["scheduler"], deadline,
                              errors)
    resources = reply.get("resources", {})
    workers: dict[str, NodeFacts] = {}
    unreported: dict[str, str] = {}
    for address, answer in reply.get("workers", {}).items():
        facts = _decode("worker", address, answer, deadline, errors)
        if facts is None:
            unreported[address] = answer.get("error", "raised")
        else:
            workers[address] = replace(
                facts, address=address, resources=dict(resources.get(address, {}))
            )
    return ClusterFacts(
        client=client_facts,
        scheduler=scheduler_facts,
        workers=workers,
        errors=tuple(errors),
        expected_workers=tuple(sorted(reply.get("workers", {}))),
        unreported=unreported,
        scheduler_address=scheduler_address,
        seconds=time.perf_counter() - t0,
    )


async def _on_scheduler(client: Client, args: tuple, limit: float) -> dict:
    """The fan-out on the scheduler (as client.run_on_scheduler, with the function pickled
    once per process); the scheduler bounds each worker, `limit` bounds the scheduler."""
    from distributed.core import clean_exception
    from distributed.protocol.pickle import dumps

    response = await asyncio.wait_for(
        client.scheduler.run_function(
            function=_pickled(_FAN_OUT), args=dumps(args), kwargs=dumps({}), wait=True
        ),
        limit,
    )
    if response["status"] == "error":
        _, exc, tb = clean_exception(**response)
        raise exc.with_traceback(tb)
    return response["result"]


def _direct(
    client: Client, runner: Callable[..., Any], payload: Payload, kwargs: dict, deadline: float
) -> dict:
    """Workers' facts through client.run: the fallback when the scheduler runs no code."""
    info = all_workers_info(client)
    try:
        replies = client.run(
            runner, payload.digest, payload.source, "worker", kwargs,
            on_error="return", callback_timeout=deadline,
        )
    except Exception as e:  # one hung worker holds the whole broadcast: all are unknown
        replies = {address: e for address in info}
    answers = {
        address: (
            {"error": _kind(r), "text": f"{type(r).__name__}: {r}"}
            if isinstance(r, BaseException)
            else {"facts": r}
        )
        for address, r in replies.items()
    }
    resources = {a: dict(w.get("resources") or {}) for a, w in info.items()}
    return {"workers": answers, "resources": resources}


def _kind(e: BaseException) -> str:
    if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    if isinstance(e, (OSError, EOFError)):
        return "lost"
    return "raised"


def _decode(
    role: str, node: str, answer: dict, deadline: float, errors: list[Result]
) -> NodeFacts | None:
    if "facts" in answer:
        try:
            data = answer["facts"]
            return read_facts(data) if isinstance(data, (bytes, str)) else facts_of(data)
        except Unreadable as e:  # another version's collector, or not a collector at all
            answer = {"error": "raised", "text": f"unreadable facts ({e})"}
    errors.append(error_result(role, node, answer.get("error", "raised"), answer.get("text", ""),
                               deadline))
    return None


def error_result(role: str, node: str, kind: str, text: str, deadline: float) -> Result:
    """The Result for a process that did not report: hung, gone, or its collector raised."""
    first = (text.strip().splitlines() or [""])[0][:300]
    if kind == "timeout":
        why = f"no answer within {deadline:g} s: the {role} is hung or overloaded"
        fix = f"look at the {role}'s log; restart it (kill -9 if it ignores SIGTERM)"
    elif kind == "lost":
        why = f"connection lost ({first}): the {role} died or left"
        fix = f"look at the {role}'s log (out of memory? killed?) and restart it"
    else:
        why = f"the facts collector raised {first}"
        fix = "run `envcheck verify node` on that host to see the failure there"
    return Result(
        "facts", Status.ERROR, f"{role} did not report: {why}", node=node, fix=fix, group=GROUP
    )
