"""`verify cluster` from options to Report: reach the cluster, gather every process's facts,
judge them (cluster checks, node checks per worker), smoke-test, measure.

With no address, envcheck starts the cluster itself (LocalCUDACluster with one worker per GPU,
else LocalCluster), verifies it and shuts it down: the README's main command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from envcheck.errors import BadInput, EnvcheckError, Unreachable
from envcheck.report import Measurement, Report, Result, Status, Table
from envcheck.verify.across.processes import ClusterFacts
from envcheck.verify.across.skew import skew_by_process, skew_report
from envcheck.verify.across.workers import (
    NodeChecks,
    cluster_pids_by_host,
    kept_node_checks,
    node_checks,
    node_checks_per_worker,
    skipped_node_checks,
)
from envcheck.verify.cluster.child_output import children_stderr_to_log, remove_if_empty
from envcheck.verify.cluster.connect import (
    HandshakeSkew,
    address_from_scheduler_file,
    check_address,
    connect,
    embedded_cluster,
    embedded_gap_results,
    embedded_gpu_gap,
    embedded_kind,
    gpu_count,
    security_from_files,
)
from envcheck.verify.cluster.gather import CollectOptions, gather_facts
from envcheck.verify.cluster.options import ClusterOptions
from envcheck.verify.cluster.probe import (
    PeerVersions,
    answered,
    facts_from_versions,
    package_version,
    versions_msg,
)
from envcheck.verify.cluster.registry import (
    cluster_tables,
    facts_errors,
    run_cluster_checks,
)
from envcheck.verify.cluster.scheduler_loss import quiet_dask_logs, scheduler_lost
from envcheck.verify.cluster.start_failure import node_caused_start_failure
from envcheck.verify.expect_options import expectations_from_options
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts
from envcheck.verify.runner import skips

if TYPE_CHECKING:
    from distributed import Client

GROUP = "cluster"

# distributed imports pynvml at import time; the `pynvml` wheel that redirects to nvidia-ml-py
# then warns on every run, on stderr, about how *it* was installed: noise above our one line.
warnings.filterwarnings("ignore", "The pynvml package is deprecated", FutureWarning)


def verify_cluster(options: ClusterOptions) -> Report:
    """Reach (or start) the cluster the options name, verify it, release it -> one Report."""
    exp = expectations_from_options(options.expect)
    security = security_from_files(options.tls_ca_file, options.tls_cert, options.tls_key)
    quiet_dask_logs(options.debug)
    with contextlib.ExitStack() as stack:
        try:
            client, described = stack.enter_context(_cluster(options, security, exp.skip))
        except HandshakeSkew as skew:  # no Client: the skew the raw probe saw is the report
            return handshake_skew_report(skew.peer, skew.reason)
        except Unreachable as e:
            judged = node_caused_start_failure(options, e) if options.embedded else None
            if judged is None:
                raise
            return judged
        report = verify_client(client, exp, options, described)
        if options.embedded:  # GPUs NVML cannot read: say so, do not pass
            gap = embedded_gap_results()
            report = dataclasses.replace(report, results=(*gap, *report.results))
        return report


def verify_client(
    client: Client, exp: Expectations, options: ClusterOptions, described: str = ""
) -> Report:
    """verify() on a client this caller holds; a scheduler lost meanwhile is said first."""
    report = verify(client, exp, options, described=described)
    lost = scheduler_lost(client, client.scheduler.address or described)
    if lost:
        report = dataclasses.replace(report, results=(*lost, *report.results))
    return report


@contextlib.contextmanager
def _cluster(
    options: ClusterOptions, security: object, skip: frozenset[str] = frozenset()
) -> Iterator[tuple[Client, str]]:
    """A client to the cluster to verify, and a line describing that cluster (``skip``: the
    check ids not to run, which an embedded cluster's preload follows). A client of the
    caller's is used as it is and left open."""
    if options.client is not None:
        client = options.client
        yield client, f"client of {getattr(client.scheduler, 'address', '') or ''}"
        return
    address = options.address  # "" is an address too (an unset $SCHED): refused, not embedded
    if options.scheduler_file:
        address = address_from_scheduler_file(options.scheduler_file)
    if address is not None:
        address = check_address(address, security)  # type: ignore[arg-type]
        with connect(address, security, options.timeout) as client:  # type: ignore[arg-type]
            yield client, address
        return
    if security is not None:
        raise BadInput("TLS options need a scheduler address (the embedded cluster is local)")
    if options.jobqueue:
        from envcheck.verify.cluster.jobqueue import jobqueue_cluster, parse_options

        with jobqueue_cluster(options.jobqueue, options.workers,  # type: ignore[arg-type]
                              parse_options(list(options.jobqueue_options)), options.timeout,
                              options.jobqueue_config, options.gpus_per_worker) as got:
            yield got
        return
    gpus = gpu_count()
    kind, why = embedded_kind(gpus, embedded_gpu_gap() if not gpus else None)
    with contextlib.ExitStack() as stack:
        # its worker processes keep their stderr in a log, off the terminal (a Ctrl-C there
        # reaches them too: one line from envcheck, not their tracebacks)
        with children_stderr_to_log(options.debug) as log:
            stack.callback(remove_if_empty, log)  # runs after the cluster has closed
            client = stack.enter_context(embedded_cluster(
                n_workers=options.workers, gpus=gpus,
                warm=_warm_modules(options, skip, kind, gpus)))
        yield client, f"embedded {kind} ({why})"


def _warm_modules(options: ClusterOptions, skip: frozenset[str], kind: str,
                  gpus: int) -> tuple[str, ...]:
    """The modules the embedded cluster's workers import as they start, where
    warm.modules_to_warm says so (workers: --workers, else one a GPU, else at most one a
    CPU)."""
    import importlib.util

    from envcheck.verify.smoke import warm

    cpus = warm.cpus()
    workers = options.workers or (gpus if kind == "LocalCUDACluster" else cpus)

    def installed(module: str) -> bool:
        return importlib.util.find_spec(module) is not None

    return warm.modules_to_warm(options.smoke, skip, workers, cpus, installed)  # type: ignore


def verify(
    client: Client,
    exp: Expectations,
    options: ClusterOptions | None = None,
    *,
    described: str = "",
) -> Report:
    """Everything after connecting: facts, checks, smoke tests, measurements -> one Report."""
    options = options or ClusterOptions()
    cluster, run_checks = _facts_round(client, exp, options)
    results, tables = judge(cluster, exp, run_checks)
    measurements = [Measurement("facts round", cluster.seconds, "s",
                                node=f"{len(cluster.by_process())} processes")]
    results += _smoke(client, cluster, exp, options, skew_by_process(results))
    if options.bench and cluster.workers:
        try:
            got, problems = _bench(client, cluster, options)
        except Exception as e:
            got, problems = [], [_step_error("bench", e)]
        measurements += got
        results += problems
    return Report(
        title="envcheck verify cluster",
        results=tuple(results),
        measurements=tuple(measurements),
        tables=tuple(tables),
        environment=_environment(client, cluster, described),
        hosts={a: f.host for a, f in cluster.workers.items()},
    )


def _facts_round(
    client: Client, exp: Expectations, options: ClusterOptions
) -> tuple[ClusterFacts, NodeChecks]:
    """One facts round (and the versions of workers whose collector raised), with verify
    node's checks ready to run on each worker."""
    collect = CollectOptions(exp.import_modules, exp.libraries, exp.probe_timeout)
    run_checks = kept_node_checks(options.plugins, exp.skip)
    if run_checks is not None:  # a thread would cost more (GIL hand-over) than it hides
        cluster = gather_facts(client, options.timeout, collect)
    else:
        with ThreadPoolExecutor(1) as pool:
            # The entry-point scan for plugin checks reads every installed distribution: do
            # it while this thread only waits for the cluster's answers.
            checks = pool.submit(node_checks, options.plugins, exp.skip)
            cluster = gather_facts(client, options.timeout, collect)
            run_checks = checks.result()
    versions_only = _versions_of_unreported(client, cluster, options.timeout)
    if versions_only:
        cluster = dataclasses.replace(cluster, versions_only=versions_only)
    return cluster, run_checks


def judge(
    cluster: ClusterFacts, exp: Expectations, run_checks: NodeChecks
) -> tuple[list[Result], list[Table]]:
    """Pure: the cluster checks, then verify node's checks on every worker folded per host,
    and the tables that go with them. What did not report comes right after membership."""
    checks = run_cluster_checks(cluster, exp, exp.skip)
    n_members = sum(1 for r in checks if r.check == "workers")
    results = [*checks[:n_members], *facts_errors(cluster, exp), *checks[n_members:]]
    results += skipped_node_checks(exp.skip)
    results += node_checks_per_worker(
        cluster.workers, exp, run_checks, cluster_pids_by_host(cluster.by_process())
    )
    return results, cluster_tables(cluster, exp, exp.skip)


def _smoke(
    client: Client, cluster: ClusterFacts, exp: Expectations, options: ClusterOptions,
    skewed: dict[str, tuple[str, ...]],
) -> list[Result]:
    """The smoke tests; ``skewed`` (worker -> its failing skew checks) holds out the workers
    a task from this client could crash, and names the skew when a worker dies anyway."""
    if cluster.workers and options.smoke != frozenset():
        from envcheck.verify.smoke.suite import run_smoke

        return _guarded("smoke", lambda: run_smoke(
            client, cluster.workers, options.smoke, options.smoke_timeout,  # type: ignore
            skip=exp.skip, skewed=skewed,
        ))
    # no smoke test runs: those --skip names are still said to be skipped
    from envcheck.verify.catalog import CATALOG

    return skips((c.id for c in CATALOG if c.kind == "smoke"), exp.skip, "smoke")


def _versions_of_unreported(
    client: Client, cluster: ClusterFacts, timeout: float
) -> dict[str, NodeFacts]:
    """A worker that could not run the facts collector (it raised: often while unpickling it,
    with another cloudpickle) still answers distributed's plain `versions` op, which needs no
    pickling: enough to put it in the skew table. Hung and lost workers are not asked again."""
    raised = sorted(a for a, why in cluster.unreported.items() if why == "raised")
    if not raised:
        return {}
    try:
        replies = client.sync(
            client.scheduler.broadcast,
            msg=versions_msg(),
            workers=raised,
            on_error="ignore",
            callback_timeout=timeout,
        )
    except Exception:  # best effort: the facts error already names these workers
        return {}
    return {a: facts_from_versions("worker", a, v) for a, v in sorted(answered(replies).items())}


def handshake_skew_report(peer: PeerVersions, reason: str) -> Report:
    """The report when this client cannot talk to the cluster at all: the skew the raw probe
    saw (scheduler and the workers that answered against this process), and how to fix it."""
    import distributed

    from envcheck.verify.facts import collect_node_facts

    processes = {"client": collect_node_facts("client")}
    processes["scheduler"] = facts_from_versions("scheduler", peer.address, peer.scheduler)
    for address, versions in sorted(peer.workers.items()):
        processes[address] = facts_from_versions("worker", address, versions)
    table, results = skew_report(processes, ())
    mine = processes["client"]
    theirs = f"distributed {peer.distributed}, Python {peer.python}"
    handshake = Result(
        "skew.handshake",
        Status.FAIL,
        f"this client (distributed {distributed.__version__}, Python {mine.python}) cannot "
        f"talk to the scheduler at {peer.address} ({theirs}): {reason}",
        node=peer.address,
        fix=(
            "a Dask client must share the cluster's environment: run the verify from it, "
            "`python -m pip install cluster-envcheck && python -m envcheck verify cluster "
            f"{peer.address}` with that environment's python ({theirs}); or give this "
            f"client the cluster's versions (pip install 'distributed=={peer.distributed}' "
            f"'dask=={_package(peer, 'dask')}')"
        ),
        group="skew",
    )
    return Report(
        title="envcheck verify cluster",
        results=(handshake, *results),
        tables=(table,),
        environment={
            "scheduler": peer.address,
            "workers": f"{len(peer.workers)} answered the versions probe",
            "client python": f"{mine.python} ({mine.python_executable})",
            "client distributed": distributed.__version__,
            "scheduler distributed": peer.distributed,
            "scheduler python": peer.python,
        },
    )


def _package(peer: PeerVersions, name: str) -> str:
    return package_version(peer.scheduler, name) or "?"


def _guarded(what: str, step: Callable[[], list[Result]]) -> list[Result]:
    """A step that talks to the cluster; if it breaks unexpectedly, the report says so and the
    rest of the report (facts, skew, checks) still comes out."""
    try:
        return step()
    except Exception as e:
        return [_step_error(what, e)]


def _step_error(what: str, e: Exception) -> Result:
    if isinstance(e, EnvcheckError):
        raise e
    return Result(
        what,
        Status.ERROR,
        f"{what} could not run: {type(e).__name__}: {str(e).strip()[:300]}",
        fix="run again with --debug; report it if the cluster is healthy",
        group=GROUP,
    )


def _bench(
    client: Client, cluster: ClusterFacts, options: ClusterOptions
) -> tuple[list[Measurement], list[Result]]:
    """Transfers and all-reduce on this cluster; for the embedded default, UCX transfers too.

    The embedded default runs over TCP; a second local cluster over UCX (when distributed-ucxx
    is installed) shows the user what the protocol costs on this machine.
    """
    import importlib.util

    from envcheck.verify.smoke.measure import run_measurements

    got = run_measurements(client, cluster.workers, timeout=options.smoke_timeout)
    measurements, problems = list(got), list(got.problems)
    if not options.embedded:
        return measurements, problems
    if importlib.util.find_spec("distributed_ucxx") is None:
        problems.append(
            Result(
                "bench.ucx",
                Status.SKIP,
                "UCX transfers not measured: distributed-ucxx is not installed",
                fix="pip install distributed-ucxx-cu12 (or -cu13) to compare TCP with UCX",
                group="bench",
            )
        )
        return measurements, problems
    more, trouble = _ucx_transfers(cluster, options)
    return measurements + more, problems + trouble


def _ucx_transfers(
    cluster: ClusterFacts, options: ClusterOptions
) -> tuple[list[Measurement], list[Result]]:
    """Transfers on a second embedded cluster of as many workers, over UCX."""
    from envcheck.verify.smoke.measure import measure_transfers

    measurements: list[Measurement] = []
    problems: list[Result] = []
    local_gpus = len(cluster.client.gpus)  # the embedded cluster runs here
    try:
        with embedded_cluster("ucx", n_workers=len(cluster.workers), gpus=local_gpus) as ucx:
            ucx_facts = gather_facts(ucx, options.timeout)
            problems += ucx_facts.errors
            transfers = measure_transfers(ucx, ucx_facts.workers, timeout=options.smoke_timeout)
            measurements += list(transfers)
            problems += list(transfers.problems)
    except EnvcheckError as e:  # the UCX cluster did not start: the TCP numbers still count
        problems.append(
            Result("bench.ucx", Status.ERROR, f"UCX transfers not measured: {e.message}",
                   group="bench")
        )
    return measurements, problems


def _environment(client: Client, cluster: ClusterFacts, described: str) -> dict[str, str]:
    c = cluster.client
    return {
        "cluster": described,
        "scheduler": getattr(client.scheduler, "address", "") or "",
        "workers": str(len(cluster.expected_workers)),
        "client host": c.host,
        "client python": f"{c.python} ({c.python_executable})",
        "facts round": f"{cluster.seconds:.3f} s",
    }


__all__ = ["GROUP", "handshake_skew_report", "judge", "verify", "verify_client",
           "verify_cluster"]
