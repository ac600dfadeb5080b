"""Smoke tests of the frameworks users run on their Dask workers beside dask itself: a skorch
fit on each worker's device, and dask-pytorch-ddp's own dispatch (``dispatch.run``) forming a
torch.distributed group over the workers. Each applies when its package is installed on every
worker (suite.applicability skips saying so otherwise)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator

from envcheck.report import Result, Status
from envcheck.text import first_line
from envcheck.verify.smoke import ddp
from envcheck.verify.smoke import tasks as worker_tasks
from envcheck.verify.smoke.run import SmokeRun, result

SKORCH_ACCURACY_FLOOR = 0.90
# dask_pytorch_ddp.dispatch.run always rendezvous on this port of the first worker's host
DDP_PORT = 23456


def skorch_fit(run: SmokeRun) -> list[Result]:
    """A skorch NeuralNetClassifier fit on every worker's own device (CUDA where the worker
    has a GPU), on a fixed separable problem; training accuracy must clear a stated floor."""
    futs = {a: run.submit(worker_tasks.skorch_fit, i, ddp.is_gpu_worker(run.facts[a]), worker=a)
            for i, a in enumerate(run.workers)}
    out = []
    for a, (value, exc) in run.outcomes(futs, "the skorch fit").items():
        if exc is not None:
            out.append(result("skorch", Status.FAIL, f"fit raised {first_line(exc)}", a))
            continue
        where = f"skorch {value['skorch']}, torch {value['torch']} on {value['device']}"
        want_gpu = ddp.is_gpu_worker(run.facts[a])
        if want_gpu and not value["device"].startswith("cuda"):
            out.append(result("skorch", Status.FAIL, f"{where}: the worker has a GPU, the fit "
                              "ran on the CPU", a, fix="a torch build with CUDA on the workers"))
        elif value["accuracy"] < SKORCH_ACCURACY_FLOOR:
            out.append(result("skorch", Status.FAIL, f"{where}: training accuracy "
                              f"{value['accuracy']:.3f} < floor {SKORCH_ACCURACY_FLOOR}", a))
        else:
            out.append(result("skorch", Status.PASS, f"{where}: training accuracy "
                              f"{value['accuracy']:.3f} >= {SKORCH_ACCURACY_FLOOR}", a))
    return out


@contextlib.contextmanager
def _port_turn() -> Iterator[None]:
    """One dask-pytorch-ddp dispatch at a time from this machine: every one of them takes the
    same port on its first worker's host."""
    path = os.path.join(tempfile.gettempdir(), f"envcheck-dask-pytorch-ddp-{DDP_PORT}.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ddp_dispatch(run: SmokeRun) -> list[Result]:
    """dask_pytorch_ddp.dispatch.run over every worker (NCCL when all have GPUs, else gloo):
    rank r adds r+1, every rank must hold the sum; world size = the workers."""
    from dask_pytorch_ddp import dispatch

    gpus = [a for a in run.workers if ddp.is_gpu_worker(run.facts[a])]
    backend = "nccl" if gpus and len(gpus) == len(run.workers) else "gloo"
    world = len(run.workers)
    want = ddp.expected_sum(world)
    with _port_turn():
        # arguments by keyword: dispatch.run puts positional ones where its own keywords go
        futs = run.track(dispatch.run(run.client, worker_tasks.shipped(
            worker_tasks.ddp_dispatch_allreduce), n=1024, backend=backend))
        outcomes = run.outcomes({str(i): f for i, f in enumerate(futs)}, "dispatch.run")
    out = []
    for _, (value, exc) in sorted(outcomes.items()):
        if exc is not None:
            out.append(result("dask-pytorch-ddp", Status.FAIL, f"a rank raised {first_line(exc)}",
                              fix=f"dispatch.run rendezvous on port {DDP_PORT} of the first "
                              "worker's host: it must be free and reachable from every worker"))
            continue
        label = f"rank {value['rank']}/{value['world']} over {backend} on {value['host']}"
        if value["world"] != world or value["min"] != want or value["max"] != want:
            out.append(result("dask-pytorch-ddp", Status.FAIL, f"{label}: [{value['min']}, "
                              f"{value['max']}], expected {want:g} with world {world}"))
        else:
            out.append(result("dask-pytorch-ddp", Status.PASS,
                              f"{label} ({value['device']}): sum {want:g}"))
    return out
