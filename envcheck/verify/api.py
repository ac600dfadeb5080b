"""The verify side as Python calls: what `envcheck verify node` and `verify cluster` do, from a
script or a notebook, returning the Report the command line renders.

    from envcheck.verify.api import verify_cluster, verify_node

    report = verify_node(expect_gpus=8, expect_gpu_model="A100", skip=("xid",))
    report = verify_cluster(client, smoke="none", expect="a100x8.yaml")
    report.status, report.exit_code(), [r for r in report.results if r.status.value == "fail"]

Keyword arguments are the command line's options with underscores: those of NodeOptions /
ClusterOptions (timeout, smoke, bench, plugins, level, prefix, ...) and the expectations
(expect_gpus, min_gpu_memory="40GiB", cuda="12.4", imports=("torch",), skip=("ecc",),
expect="FILE" for an --expect file, ...; see docs/api.md). Bad input raises
envcheck.errors.BadInput, as the command line exits 4 for it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.errors import BadInput
from envcheck.report import Report
from envcheck.verify.expectations import ExpectOptions

if TYPE_CHECKING:
    from distributed import Client

    from envcheck.verify.cluster.options import ClusterOptions
    from envcheck.verify.node.options import NodeOptions

__all__ = ["verify_cluster", "verify_job", "verify_node"]

_EXPECT_FIELDS = {f.name for f in dataclasses.fields(ExpectOptions)} - {"file"}


def verify_node(**options: Any) -> Report:
    """Verify this machine (or `prefix=` an environment, or `facts=` a saved facts file).

    Options: facts, prefix, save_facts, plugins (default True), level (1-3), load_seconds,
    kernel_log; expectations as keywords (expect_gpus=8, cuda="12.4", skip=("xid",), ...) or
    from a file: expect="node-type.yaml" (keywords override it, lists add to it).
    Returns the Report; raises BadInput for options the command line would refuse.
    """
    from envcheck.verify.node.options import NodeOptions
    from envcheck.verify.node.pipeline import verify_node as run

    return run(_options(NodeOptions, options))


def verify_cluster(client_or_address: Client | str | None = None, **options: Any) -> Report:
    """Verify a Dask cluster: facts of every process, cluster and node checks, smoke tests.

    `client_or_address`: a live distributed.Client is used as it is and left open (this call
    neither closes it nor changes the default client); a string is a scheduler address
    (tcp://, tls://, ucx://) to connect to, and the connection is closed after; None starts
    the embedded default (a LocalCUDACluster with one worker per GPU, else a LocalCluster;
    `workers=N` sizes it) and shuts it down after.

    Options: timeout, smoke ("all", "none", "submit,array" or a collection of ids),
    smoke_timeout, bench, plugins, workers, scheduler_file, tls_ca_file / tls_cert / tls_key,
    jobqueue options; expectations as in verify_node (expect_gpus=..., skip=(...),
    expect="FILE").

    A synchronous Client is needed (the one `Client(...)` gives in a script or a notebook
    cell). This call blocks until the report is ready; in Jupyter, run it in a cell as any
    blocking call. Calling it from inside a coroutine on a running event loop (an
    asynchronous Client) is not supported: run it in a thread (asyncio.to_thread) there.
    """
    from envcheck.verify.cluster.options import ClusterOptions
    from envcheck.verify.cluster.pipeline import verify_client
    from envcheck.verify.cluster.pipeline import verify_cluster as run

    if client_or_address is None or isinstance(client_or_address, str):
        if client_or_address is not None:
            options = {**options, "address": client_or_address}
        return run(_options(ClusterOptions, options))
    if "address" in options or "scheduler_file" in options:
        raise BadInput("give a client or an address, not both")
    if getattr(client_or_address, "asynchronous", False):
        raise BadInput("verify_cluster needs a synchronous Client (Client(..., "
                       "asynchronous=False)); from a coroutine, call it in a thread")
    opts = _options(ClusterOptions, options)
    from envcheck.verify.cluster.scheduler_loss import quiet_dask_logs
    from envcheck.verify.expect_options import expectations_from_options

    exp = expectations_from_options(opts.expect)
    quiet_dask_logs(opts.debug)
    address = getattr(client_or_address.scheduler, "address", "") or ""
    return verify_client(client_or_address, exp, opts, described=f"client of {address}")


def verify_job(timeout: float = 60.0, *, tensorflow: bool = False, **expect: Any) -> Report:
    """``envcheck verify job`` from Python, in every task of a parallel launch (a submitit job's
    function, an srun/torchrun/mpirun task): the group forms from the launcher's environment,
    rank 0 judges, and every task gets a Report with the same verdict (rank 0's is the full
    report; another rank's holds one ``job.verdict`` result carrying rank 0's line).

    Expectations as in verify_node (expect_gpus=..., lock=..., skip=(...), expect="FILE").
    Bounded by ``timeout`` per step, as the command; a rank that never arrives is named.
    """
    import os

    from envcheck.errors import ExitCode
    from envcheck.report import Result, Status
    from envcheck.verify.expect_options import expectations_from_options
    from envcheck.verify.job.launch import launch_info
    from envcheck.verify.job.run import JobRun

    if not timeout > 0:
        raise BadInput(f"timeout must be positive, not {timeout!r}")
    given = {("file" if k == "expect" else k): v for k, v in expect.items()}
    if given.get("file") is not None:
        given["file"] = Path(given["file"])
    unknown = sorted(set(given) - _EXPECT_FIELDS - {"file"})
    if unknown:
        raise BadInput(f"unknown option {unknown[0]!r} (known: timeout, expect, "
                       f"{', '.join(sorted(_EXPECT_FIELDS))})")
    exp = expectations_from_options(_expect_options(given))
    launch = launch_info(os.environ)
    outcome = JobRun(launch, exp, timeout, tensorflow=tensorflow).run()
    if isinstance(outcome, Report):
        return outcome
    code, line = outcome
    status = {ExitCode.OK: Status.PASS, ExitCode.WARN: Status.WARN,
              ExitCode.FAIL: Status.FAIL}.get(ExitCode(code), Status.ERROR)
    return Report(title="envcheck verify job", code=ExitCode(code), results=(
        Result("job.verdict", status, line or f"rank 0 ended with exit {code}",
               node=f"rank {launch.rank}", group="job"),))


def verify_ray(address: str | None = None, **options: Any) -> Report:
    """``envcheck verify ray``: a Ray cluster at ``address`` (host:port on a node of it, or
    ray://host:port), or a local one started and shut down when None. Options: timeout,
    expect_nodes, train, train_workers; expectations as in verify_node."""
    from envcheck.verify.ray.pipeline import RayOptions
    from envcheck.verify.ray.pipeline import verify_ray as run

    return run(_options(RayOptions, {**options, "address": address}))


def _options(
    kind: type[NodeOptions] | type[ClusterOptions], given: dict[str, Any]
) -> Any:
    """Keyword arguments split between the verb's options and its expectations."""
    own = {f.name for f in dataclasses.fields(kind)} - {"expect"}
    verb: dict[str, Any] = {}
    expect: dict[str, Any] = {}
    for key, value in given.items():
        if key == "expect":
            expect["file"] = None if value is None else Path(value)
        elif key in _EXPECT_FIELDS:
            expect[key] = value
        elif key in own:
            verb[key] = value
        else:
            known = sorted(own | _EXPECT_FIELDS | {"expect"})
            raise BadInput(f"unknown option {key!r} (known: {', '.join(known)})")
    return kind(expect=_expect_options(expect), **verb)


def _expect_options(given: dict[str, Any]) -> ExpectOptions:
    """Keyword values read as an --expect file's values are (sizes as "40GiB", versions as
    strings, lists for imports/libraries/skip), so a script and a file say things alike."""
    from envcheck.verify.expect_file import KEYS, Wrong

    readers = {field: (key, read) for key, (field, read) in KEYS.items()}
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name == "file" or value is None:
            out[name] = value
            continue
        key, read = readers[name]
        if name == "lock" and isinstance(value, Path):
            value = str(value)
        if name in ("imports", "libraries", "skip") and isinstance(value, (tuple, set, frozenset)):
            value = list(value)
        try:
            out[name] = read(value)
        except Wrong as e:
            raise BadInput(f"{name} must be {e}, not {type(value).__name__} {value!r}") from None
    if isinstance(out.get("lock"), str):
        out["lock"] = Path(out["lock"])
    return ExpectOptions(**out)
