"""Reaching a Ray cluster and collecting its facts: the only module that imports Ray.

Every wait is bounded by one deadline: ``ray.init`` runs in a thread (against a port that
accepts and never answers it would retry for minutes), and tasks are waited for with
``ray.wait(timeout=...)``; a node or task that does not answer in time is named, not waited on.
Functions sent to the nodes are nested, so cloudpickle ships them by value: the nodes need
Ray, not envcheck (the facts package travels with them, verify/shipping.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

from envcheck.errors import BadInput, Unreachable
from envcheck.inputs import loads_json
from envcheck.text import first_line
from envcheck.verify.bounded import Unreadable, conforms, read_facts
from envcheck.verify.facts import collect_node_facts
from envcheck.verify.ray.model import GpuTask, RayFacts, RayNode, TrainRun
from envcheck.verify.shipping import facts_payload, load_facts


def import_ray() -> Any:
    # envcheck runs as root on cluster nodes: it never lets Ray report usage to an outside host
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as e:
        raise BadInput(f"verify ray needs Ray in this environment ({e}): pip install ray") from None
    return ray


def split_address(address: str) -> tuple[str, str, int]:
    """'ray://h:p' or 'h:p' -> (scheme, host, port); BadInput for anything else."""
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "ray"):
        raise BadInput(f"not a Ray address: {address!r} (use host:port or ray://host:port)")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/ @"):
        raise BadInput(f"not a Ray address: {address!r} (use host:port or ray://host:port)")
    return scheme, host.strip("[]"), int(port)


def _reachable(host: str, port: int, timeout: float) -> None:
    try:
        with socket.create_connection((host, port), timeout=max(timeout, 0.1)):
            return
    except OSError as e:
        raise Unreachable(f"no Ray cluster at {host}:{port}: {e.strerror or e}") from None


def connect(ray: Any, address: str | None, timeout: float) -> None:
    """ray.init: to ``address``, or a local cluster when None; Unreachable after ``timeout``."""
    kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    if address is None:  # "local": a new cluster, not one a `ray start` left on this machine
        kwargs.update(address="local", include_dashboard=False)
    else:
        scheme, host, port = split_address(address)
        _reachable(host, port, timeout)
        kwargs["address"] = address
    if address is None:  # Ray starts its own processes from the main thread, bounded by itself
        try:
            with _own_sigterm():
                ray.init(**kwargs)
        except Exception as e:  # noqa: BLE001 - one line, as any other unreachable cluster
            raise Unreachable(f"a local Ray cluster did not start: {_told(e)}") from None
        return
    failure: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(**kwargs)
        except BaseException as e:  # noqa: BLE001 - carried to the caller's thread
            failure.append(e)

    thread = threading.Thread(target=init, name="envcheck-ray-init", daemon=True)
    thread.start()
    thread.join(timeout)
    where = address or "a local Ray cluster"
    if thread.is_alive():
        raise Unreachable(f"{where} did not answer ray.init within {timeout:g} s")
    if failure:
        line = (str(failure[0]).strip().splitlines() or [type(failure[0]).__name__])[0]
        raise Unreachable(f"ray.init({address or ''}) failed: {line[:300]}")


@contextlib.contextmanager
def _own_sigterm() -> Iterator[None]:
    """ray.init in the main thread replaces the SIGTERM handler with one that calls
    sys.exit(15): the run would end with exit 15 and skip envcheck's handling. The caller's
    handler is put back when ray.init returns, and a SIGTERM taken by Ray's meanwhile is
    raised as envcheck's own (Terminated: exit 143, the local cluster shut down)."""
    import signal

    from envcheck.interrupts import Terminated

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    except SystemExit as e:
        if e.code != signal.SIGTERM:
            raise
        raise Terminated() from None
    finally:
        signal.signal(signal.SIGTERM, before)


def shutdown(ray: Any, local: bool) -> None:
    """ray.shutdown; for a local cluster, also every process it started that is still there
    after it. Ray's agents (dashboard, runtime env) outlive their raylet by 60-75 s, listening
    on 0.0.0.0; the descendants of this process are noted before the shutdown and killed
    after it (each checked by its start time, so a reused pid is never hit)."""
    left = _descendants(os.getpid()) if local else {}
    ray.shutdown()
    for pid, started in left.items():
        if _proc_stat(pid)[1:] == (started,):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)  # SIGKILL


def _proc_stat(pid: int) -> tuple[int, ...]:
    """(parent pid, start time) of a running process from /proc; () when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return ()
    return () if fields[0] == b"Z" else (int(fields[1]), int(fields[19]))


def _descendants(root: int) -> dict[int, int]:
    """pid -> start time of every running descendant of ``root`` ({} without /proc)."""
    children: dict[int, list[int]] = {}
    started: dict[int, int] = {}
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        st = _proc_stat(pid)
        if st:
            children.setdefault(st[0], []).append(pid)
            started[pid] = st[1]
    out: dict[int, int] = {}
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid not in out:
            out[pid] = started[pid]
            todo += children.get(pid, ())
    return out


def list_nodes(ray: Any) -> tuple[RayNode, ...]:
    out = []
    for n in ray.nodes():
        out.append(RayNode(
            node_id=str(n.get("NodeID", "")),
            ip=str(n.get("NodeManagerAddress", "")),
            hostname=str(n.get("NodeManagerHostname", "")),
            alive=bool(n.get("Alive", n.get("alive", False))),
            gpus=float((n.get("Resources") or {}).get("GPU", 0.0)),
            death=str(n.get("DeathReasonMessage", "") or ""),
        ))
    return tuple(out)


def _make_tasks() -> tuple[Callable[..., str], Callable[..., str], type]:
    # Nested: shipped by value. Comments, not docstrings: they would travel with each call.
    load = load_facts

    # this node's facts, as verify node collects them for a worker
    def node_facts(digest: str, blob: bytes, kwargs: dict) -> str:

        module = load(digest, blob)
        facts = module.collect_node_facts("worker", "", **kwargs)
        return json.dumps(module.facts_to_dict(facts), separators=(",", ":"))

    # the GPU Ray gave this task, once every GPU task holds its GPU (so none is handed twice)
    def gpu_task(digest: str, blob: bytes, barrier: Any, count: int, wait: float) -> str:
        import os
        import time

        import ray

        ray.get(barrier.arrive.remote())
        end = time.monotonic() + wait
        while ray.get(barrier.arrived.remote()) < count and time.monotonic() < end:
            time.sleep(0.05)
        module = load(digest, blob)
        facts = module.collect_node_facts("worker", "", health=False, arch_probe=False)
        return json.dumps({
            "node_id": ray.get_runtime_context().get_node_id(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "uuids": list(facts.visible_gpu_uuids),
            "node_gpus": len(facts.gpus),
            "problem": facts.visible_devices_problem,
        })

    class Barrier:
        def __init__(self) -> None:
            self.n = 0

        def arrive(self) -> int:
            self.n += 1
            return self.n

        def arrived(self) -> int:
            return self.n

    return node_facts, gpu_task, Barrier


def _pinned(ray: Any, node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def _told(e: BaseException) -> str:
    """first_line of what a task raised: Ray wraps it (RayTaskError, whose text is a traceback)
    and keeps it as ``cause``."""
    cause = getattr(e, "cause", None)
    return first_line(cause if isinstance(cause, BaseException) else e)


def _wait(ray: Any, refs: dict[Any, str], deadline: float) -> dict[str, Any]:
    """key -> the task's value, or the exception it raised, or TimeoutError; bounded."""
    ready, _ = ray.wait(list(refs), num_returns=len(refs),
                        timeout=max(0.0, deadline - time.monotonic()))
    out: dict[str, Any] = {}
    for ref, key in refs.items():
        if ref not in ready:
            out[key] = TimeoutError("did not answer before the deadline")
            ray.cancel(ref, force=True)
            continue
        try:
            out[key] = ray.get(ref)
        except Exception as e:  # noqa: BLE001 - the node's failure is the fact
            out[key] = e
    return out


def gather(ray: Any, address: str, timeout: float, kwargs: dict) -> RayFacts:
    """The nodes, each alive node's facts and every advertised GPU's task, within ``timeout``."""
    deadline = time.monotonic() + timeout
    nodes = list_nodes(ray)
    alive = [n for n in nodes if n.alive]
    payload = facts_payload()
    node_facts, gpu_task, barrier_class = _make_tasks()
    facts_remote = ray.remote(num_cpus=0, max_retries=0)(node_facts)
    refs = {facts_remote.options(scheduling_strategy=_pinned(ray, n.node_id))
            .remote(payload.digest, payload.source, kwargs): n.node_id for n in alive}
    gpu_refs: dict[Any, str] = {}
    count = sum(int(n.gpus) for n in alive)
    if count:
        barrier = ray.remote(num_cpus=0)(barrier_class).remote()
        task = ray.remote(num_cpus=0, num_gpus=1, max_retries=0)(gpu_task)
        wait = max(0.0, (deadline - time.monotonic()) / 2)
        for n in alive:
            for i in range(int(n.gpus)):
                ref = task.options(scheduling_strategy=_pinned(ray, n.node_id)).remote(
                    payload.digest, payload.source, barrier, count, wait)
                gpu_refs[ref] = f"{n.node_id}#{i}"
    client = collect_node_facts("client", "", health=False, arch_probe=False)
    got = _wait(ray, {**refs, **gpu_refs}, deadline)
    facts, errors = {}, {}
    for nid in refs.values():
        value = got[nid]
        if isinstance(value, BaseException):
            errors[nid] = _told(value)
        else:
            try:
                facts[nid] = read_facts(value)
            except Unreadable as e:
                errors[nid] = f"unreadable facts ({e})"
    return RayFacts(address=address, ray_version=getattr(ray, "__version__", ""),
                    nodes=nodes, facts=facts, fact_errors=errors, client=client,
                    gpu_tasks=tuple(_gpu_results(got, gpu_refs.values())))


def _gpu_results(got: dict[str, Any], keys: Any) -> list[GpuTask]:
    out = []
    for key in keys:
        value, node_id = got[key], key.split("#")[0]
        if isinstance(value, BaseException):
            out.append(GpuTask(node_id, (), None, (), 0, error=_told(value)))
            continue
        try:
            d = loads_json(value, "a GPU task's answer")
            why = conforms(GpuTask, d)
            if why:
                raise ValueError(why)
            out.append(GpuTask(d["node_id"], tuple(d["gpu_ids"]), d["visible"],
                               tuple(d["uuids"]), d["node_gpus"], problem=d.get("problem", "")))
        except (BadInput, KeyError, TypeError, ValueError) as e:
            out.append(GpuTask(node_id, (), None, (), 0,
                               error=f"unreadable answer ({type(e).__name__})"))
    return out


def _make_train() -> tuple[Callable[[dict], None], type]:
    # Nested: shipped to the Train workers by value (they need torch and Ray, not envcheck).
    # Every worker r adds r+1 and hands the sink the smallest and largest element it holds.
    def train_loop(config: dict) -> None:
        import torch
        import torch.distributed as dist
        from ray import train

        rank = train.get_context().get_world_rank()
        device = "cuda" if config["gpu"] else "cpu"
        t = torch.full((4,), float(rank + 1), device=device)
        dist.all_reduce(t)
        config["sink"].put.remote(rank, float(t.min().item()), float(t.max().item()))

    class Sink:
        def __init__(self) -> None:
            self.got: dict = {}

        def put(self, rank: int, low: float, high: float) -> None:
            self.got[rank] = (low, high)

        def values(self) -> dict:
            return self.got

    return train_loop, Sink


def train_allreduce(ray: Any, workers: int, gpu: bool, timeout: float) -> TrainRun:
    """A TorchTrainer over ``workers`` workers (gloo on CPU, NCCL on GPUs), bounded."""
    backend = "nccl" if gpu else "gloo"
    expected = workers * (workers + 1) / 2
    t0 = time.monotonic()
    done: list[BaseException | None] = []
    train_loop, sink_class = _make_train()
    sink = ray.remote(num_cpus=0)(sink_class).remote()

    def fit() -> None:
        try:
            from ray.train import RunConfig, ScalingConfig
            from ray.train.torch import TorchConfig, TorchTrainer

            TorchTrainer(
                train_loop, train_loop_config={"gpu": gpu, "sink": sink},
                scaling_config=ScalingConfig(
                    num_workers=workers, use_gpu=gpu,
                    resources_per_worker={"GPU": 1} if gpu else {"CPU": 0.5}),
                torch_config=TorchConfig(backend=backend),
                run_config=RunConfig(name="envcheck-verify-ray"),
            ).fit()
            done.append(None)
        except BaseException as e:  # noqa: BLE001 - carried to the caller's thread
            done.append(e)

    thread = threading.Thread(target=fit, name="envcheck-ray-train", daemon=True)
    thread.start()
    thread.join(timeout)
    seconds = time.monotonic() - t0
    if not done:
        return TrainRun(workers, backend, expected, seconds=seconds,
                        error=f"no result within {timeout:g} s")
    if done[0] is not None:
        return TrainRun(workers, backend, expected, seconds=seconds, error=_told(done[0]))
    got = ray.get(sink.values.remote(), timeout=max(1.0, timeout - seconds))
    values = tuple(v for rank in sorted(got) for v in got[rank])
    return TrainRun(workers, backend, expected, got=values if len(got) == workers else (),
                    seconds=seconds)
