"""`envcheck verify cluster`: reach a cluster, gather every process's facts, judge, smoke-test.

With no address, envcheck starts the cluster itself (LocalCUDACluster with one worker per GPU,
else LocalCluster), verifies it and shuts it down: the README's main command.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from envcheck.errors import BadInput, EnvcheckError
from envcheck.flags import seconds
from envcheck.report import Measurement, Report, Result, Status
from envcheck.verify.cluster.checks import (
    check_stack_agreement,
    cluster_pids_by_host,
    kept_node_checks,
    node_checks,
    node_checks_per_worker,
)
from envcheck.verify.cluster.child_output import children_stderr_to_log
from envcheck.verify.cluster.connect import (
    DEFAULT_TIMEOUT,
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
from envcheck.verify.cluster.gather import ClusterFacts, CollectOptions, gather_facts
from envcheck.verify.cluster.hosts import hosts_view, spans_hosts
from envcheck.verify.cluster.pinning import by_host, check_pinning
from envcheck.verify.cluster.probe import (
    PeerVersions,
    answered,
    facts_from_versions,
    package_version,
    versions_msg,
)
from envcheck.verify.cluster.resources import check_resources
from envcheck.verify.cluster.scheduler_loss import quiet_dask_logs, scheduler_lost
from envcheck.verify.cluster.skew import skew_report
from envcheck.verify.cluster.slurm import check_slurm
from envcheck.verify.expectations import (
    Expectations,
    add_expectation_arguments,
    expectations_from_args,
)
from envcheck.verify.facts import NodeFacts

if TYPE_CHECKING:
    from distributed import Client

GROUP = "cluster"
DEFAULT_SMOKE_TIMEOUT = 120.0

# distributed imports pynvml at import time; the `pynvml` wheel that redirects to nvidia-ml-py
# then warns on every run, on stderr, about how *it* was installed: noise above our one line.
warnings.filterwarnings("ignore", "The pynvml package is deprecated", FutureWarning)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "address",
        nargs="?",
        help="scheduler address (tcp://, tls://, ucx://); none: start a local cluster",
    )
    parser.add_argument("--scheduler-file", type=Path, metavar="FILE", help="read the address")
    tls = parser.add_argument_group("TLS (distributed.security.Security)")
    tls.add_argument("--tls-ca-file", type=Path, metavar="FILE", help="CA certificate (PEM)")
    tls.add_argument("--tls-cert", type=Path, metavar="FILE", help="client certificate (PEM)")
    tls.add_argument("--tls-key", type=Path, metavar="FILE", help="client private key (PEM)")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"limit for connecting and for each process's facts (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--smoke",
        default="all",
        metavar="LIST",
        help="comma-separated smoke tests to run, 'all' (default: those that apply) or 'none'",
    )
    parser.add_argument(
        "--smoke-timeout",
        type=seconds,
        default=DEFAULT_SMOKE_TIMEOUT,
        metavar="SECONDS",
        help=f"limit for each smoke test (default {DEFAULT_SMOKE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--bench", action="store_true", help="measure transfer bandwidth and NCCL all-reduce"
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="workers of the embedded cluster (default: one per GPU, else LocalCluster's)",
    )
    parser.add_argument(
        "--no-plugins", action="store_true", help="skip checks from the envcheck.checks group"
    )
    jq = parser.add_argument_group("dask-jobqueue (start the workers as batch jobs)")
    jq.add_argument("--jobqueue", choices=("slurm",), help="start --workers N through SLURMCluster")
    jq.add_argument("--jobqueue-config", type=Path, metavar="FILE",
                    help="YAML with a jobqueue: slurm: section (dask-jobqueue's own format)")
    jq.add_argument("--jobqueue-option", action="append", default=[], metavar="KEY=VALUE",
                    help="SLURMCluster argument, e.g. queue=gpu, walltime=00:30:00 (repeatable)")
    jq.add_argument("--gpus-per-worker", type=int, default=1, metavar="G",
                    help="GRES GPUs per jobqueue worker (default 1; 0 for CPU workers)")
    add_expectation_arguments(parser)


def _smoke_selection(text: str) -> set[str] | None:
    """None = every smoke test that applies; an empty set = none."""
    from envcheck.verify.smoke.suite import SMOKE_TESTS

    value = text.strip().lower()
    if value == "all":
        return None
    if value == "none":
        return set()
    names = {n.strip() for n in value.split(",") if n.strip()}
    unknown = sorted(names - set(SMOKE_TESTS))
    if unknown:
        raise BadInput(
            f"unknown smoke test {', '.join(unknown)} (known: {', '.join(SMOKE_TESTS)}, all, none)"
        )
    return names


def _validate(args: argparse.Namespace) -> None:
    if args.timeout <= 0:
        raise BadInput(f"--timeout must be positive, not {args.timeout:g}")
    if args.smoke_timeout <= 0:
        raise BadInput(f"--smoke-timeout must be positive, not {args.smoke_timeout:g}")
    if args.address is not None and args.scheduler_file:
        raise BadInput("give a scheduler address or --scheduler-file, not both")
    if getattr(args, "jobqueue", None):
        if args.address is not None or args.scheduler_file:
            raise BadInput("--jobqueue starts its own cluster: it needs no address")
        if args.workers is None or args.workers < 1:
            raise BadInput("--jobqueue needs --workers N (1 or more)")
    elif args.workers is not None:
        if args.address is not None or args.scheduler_file:
            raise BadInput("--workers sizes the embedded cluster: it needs no address")
        if args.workers < 1:
            raise BadInput(f"--workers must be 1 or more, not {args.workers}")


@contextlib.contextmanager
def _cluster(args: argparse.Namespace, security: object) -> Iterator[tuple[Client, str]]:
    """A client to the cluster to verify, and a line describing that cluster."""
    address = args.address  # "" is an address too (an unset $SCHED): refused, not embedded
    if args.scheduler_file:
        address = address_from_scheduler_file(args.scheduler_file)
    if address is not None:
        address = check_address(address, security)  # type: ignore[arg-type]
        with connect(address, security, args.timeout) as client:  # type: ignore[arg-type]
            yield client, address
        return
    if security is not None:
        raise BadInput("TLS options need a scheduler address (the embedded cluster is local)")
    if getattr(args, "jobqueue", None):
        from envcheck.verify.cluster.jobqueue import jobqueue_cluster, parse_options

        with jobqueue_cluster(args.jobqueue, args.workers, parse_options(args.jobqueue_option),
                              args.timeout, args.jobqueue_config,
                              args.gpus_per_worker) as got:
            yield got
        return
    gpus = gpu_count()
    kind, why = embedded_kind(gpus, embedded_gpu_gap() if not gpus else None)
    with contextlib.ExitStack() as stack:
        # its worker processes keep their stderr in a log, off the terminal (a Ctrl-C there
        # reaches them too: one line from envcheck, not their tracebacks)
        with children_stderr_to_log(getattr(args, "debug", False)):
            client = stack.enter_context(embedded_cluster(n_workers=args.workers, gpus=gpus))
        yield client, f"embedded {kind} ({why})"


def run(args: argparse.Namespace) -> Report:
    _validate(args)
    exp = expectations_from_args(args)
    selected = _smoke_selection(args.smoke)
    security = security_from_files(args.tls_ca_file, args.tls_cert, args.tls_key)
    quiet_dask_logs(getattr(args, "debug", False))
    with contextlib.ExitStack() as stack:
        try:
            client, described = stack.enter_context(_cluster(args, security))
        except HandshakeSkew as skew:  # no Client: the skew the raw probe saw is the report
            return handshake_skew_report(skew.peer, skew.reason)
        report = verify(
            client,
            exp,
            timeout=args.timeout,
            smoke=selected,
            smoke_timeout=args.smoke_timeout,
            bench=args.bench,
            plugins=not args.no_plugins,
            described=described,
            embedded=args.address is None and args.scheduler_file is None
            and not getattr(args, "jobqueue", None),
        )
        lost = scheduler_lost(client, client.scheduler.address or described)
        if lost:
            report = dataclasses.replace(report, results=(*lost, *report.results))
        if described.startswith("embedded "):  # GPUs NVML cannot read: say so, do not pass
            gap = embedded_gap_results()
            report = dataclasses.replace(report, results=(*gap, *report.results))
        return report


def verify(
    client: Client,
    exp: Expectations,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    smoke: set[str] | None = None,
    smoke_timeout: float = DEFAULT_SMOKE_TIMEOUT,
    bench: bool = False,
    plugins: bool = True,
    described: str = "",
    embedded: bool = False,
) -> Report:
    """Everything after connecting: facts, checks, smoke tests, measurements -> one Report."""
    options = CollectOptions(exp.import_modules, exp.libraries, exp.probe_timeout)
    run_checks = kept_node_checks(plugins)
    if run_checks is not None:  # a thread would cost more (GIL hand-over) than it hides
        cluster = gather_facts(client, timeout, options)
    else:
        with ThreadPoolExecutor(1) as pool:
            # The entry-point scan for plugin checks reads every installed distribution: do
            # it while this thread only waits for the cluster's answers.
            checks = pool.submit(node_checks, plugins)
            cluster = gather_facts(client, timeout, options)
            run_checks = checks.result()
    processes = cluster.by_process()
    lock_names = tuple(p.name for p in exp.lock_packages)
    versions_only = _versions_of_unreported(client, cluster, timeout)
    table, skew_results = skew_report({**processes, **versions_only}, lock_names)
    # A worker that sent only its versions and fails skew could not run the collector
    # *because* of that skew: its facts error is that failure, not an error of the run.
    skewed = {n for r in skew_results if r.status is Status.FAIL for n in r.node.split(", ")}
    explained = frozenset(a for a in versions_only if a in skewed)
    results: list[Result] = [
        _membership(cluster, explained),
        *(_explained(r) if r.node in explained else r for r in cluster.errors),
        *skew_results,
    ]
    tables = [table]
    if spans_hosts(cluster, versions_only):
        host_table, host_results = hosts_view(cluster, versions_only)
        tables.append(host_table)
        results += host_results
    results += node_checks_per_worker(
        cluster.workers,
        exp,
        run_checks,
        cluster_pids_by_host(processes),
    )
    if cluster.workers:
        results += check_stack_agreement(cluster.workers)
        results += check_pinning(cluster.workers)
        results += check_slurm(cluster.workers, cluster.scheduler)
        results += _guarded(
            "resources",
            lambda: check_resources(
                client, {a: f.resources for a, f in cluster.workers.items()}, timeout
            ),
        )
    measurements = [
        Measurement("facts round", cluster.seconds, "s", node=f"{len(processes)} processes")
    ]
    if cluster.workers and smoke != set():
        from envcheck.verify.smoke.suite import run_smoke

        results += _guarded(
            "smoke", lambda: run_smoke(client, cluster.workers, smoke, smoke_timeout)
        )
    if bench and cluster.workers:
        try:
            got, problems = _bench(client, cluster, embedded, timeout, smoke_timeout)
        except Exception as e:
            got, problems = [], [_step_error("bench", e)]
        measurements += got
        results += problems
    return Report(
        title="verify cluster",
        results=tuple(results),
        measurements=tuple(measurements),
        tables=tuple(tables),
        environment=_environment(client, cluster, described),
    )


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
            "`python -m pip install envcheck && python -m envcheck verify cluster "
            f"{peer.address}` with that environment's python ({theirs}); or give this "
            f"client the cluster's versions (pip install 'distributed=={peer.distributed}' "
            f"'dask=={_package(peer, 'dask')}')"
        ),
        group="skew",
    )
    return Report(
        title="verify cluster",
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
    client: Client, cluster: ClusterFacts, embedded: bool, timeout: float, limit: float
) -> tuple[list[Measurement], list[Result]]:
    """Transfers and all-reduce on this cluster; for the embedded default, UCX transfers too.

    The embedded default runs over TCP; a second local cluster over UCX (when distributed-ucxx
    is installed) shows the user what the protocol costs on this machine.
    """
    import importlib.util

    from envcheck.verify.smoke.measure import measure_transfers, run_measurements

    got = run_measurements(client, cluster.workers, timeout=limit)
    measurements, problems = list(got), list(got.problems)
    if not embedded:
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
    local_gpus = len(cluster.client.gpus)  # the embedded cluster runs here
    try:
        with embedded_cluster("ucx", n_workers=len(cluster.workers), gpus=local_gpus) as ucx:
            ucx_facts = gather_facts(ucx, timeout)
            problems += ucx_facts.errors
            transfers = measure_transfers(ucx, ucx_facts.workers, timeout=limit)
            measurements += list(transfers)
            problems += list(transfers.problems)
    except EnvcheckError as e:  # the UCX cluster did not start: the TCP numbers still count
        problems.append(
            Result("bench.ucx", Status.ERROR, f"UCX transfers not measured: {e.message}",
                   group="bench")
        )
    return measurements, problems


def _explained(error: Result) -> Result:
    return dataclasses.replace(
        error,
        status=Status.FAIL,
        message=f"{error.message}; its versions differ from the client's (see skew): a worker "
        "cannot run what a client of other versions sends it",
        fix="give every process one environment (see the skew fixes)",
    )


def _membership(cluster: ClusterFacts, versions_only: frozenset[str] = frozenset()) -> Result:
    n = len(cluster.expected_workers)
    if cluster.scheduler is None and n == 0 and cluster.errors:
        return Result(
            "workers",
            Status.ERROR,
            "unknown: the scheduler did not answer the facts round (see the facts error)",
            group=GROUP,
        )
    if n == 0:
        return Result(
            "workers",
            Status.FAIL,
            "the scheduler has no workers",
            fix="start workers: dask worker SCHEDULER_ADDRESS (dask cuda worker on GPU hosts)",
            group=GROUP,
        )
    hosts = by_host(cluster.workers)
    answered = len(cluster.workers)
    if answered == n:
        status = Status.PASS
    elif answered + len(versions_only) == n:
        status = Status.FAIL  # the rest are explained by their skew
    else:
        status = Status.ERROR
    skewed = f"; {len(versions_only)} sent only versions (skewed)" if versions_only else ""
    return Result(
        "workers",
        status,
        f"{answered} of {n} workers reported facts{skewed}, on {len(hosts)} host(s): "
        + ", ".join(f"{h} ({len(w)})" for h, w in hosts.items()),
        group=GROUP,
    )


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

