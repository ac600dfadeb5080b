"""What `verify cluster` is asked to do, as one typed object (from flags or keyword arguments).

Validated when built: a bad combination is BadInput before anything connects or starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.flags import seconds
from envcheck.option import Option, declared
from envcheck.text import shown
from envcheck.verify.catalog import CATALOG
from envcheck.verify.cluster.connect import DEFAULT_TIMEOUT
from envcheck.verify.expectations import ExpectOptions


def smoke_selection(text: str) -> frozenset[str] | None:
    """'all' -> None (every smoke test that applies); 'none' -> empty; 'a,b' -> {a, b}."""
    value = text.strip().lower()
    if value == "all":
        return None
    if value == "none":
        return frozenset()
    from envcheck.verify.smoke.suite import SMOKE_TESTS

    names = {n.strip() for n in value.split(",") if n.strip()}
    unknown = sorted(names - set(SMOKE_TESTS))
    if unknown:
        # a name like a test's as typed; anything else (a newline, an escape, a megabyte) shown
        said = [n if n.isascii() and n.replace("-", "").isalnum() and len(n) <= 40 else shown(n)
                for n in unknown]
        raise BadInput(
            f"unknown smoke test {', '.join(said)} (known: {', '.join(SMOKE_TESTS)}, all, none)"
        )
    return frozenset(names)


def _typed(value: object) -> str:
    view = shown(value)
    return view if view.startswith(("a ", "an ")) else f"{type(value).__name__} {view}"


def _gpus_per_worker(value: object, said: str) -> int:
    return values.count(value, said, least=0)


TLS = "TLS (distributed.security.Security)"
JOBQUEUE = "dask-jobqueue (start the workers as batch jobs)"
# what shell completion offers after --smoke: every test's name, all, none
SMOKE_WORDS = ("all", "none", *(c.id.split(".", 1)[1] for c in CATALOG if c.kind == "smoke"))
PLUGINS_HELP = "skip checks from the envcheck.checks group"


def _smoke(value: object, said: str) -> frozenset[str] | None:
    """None: every smoke test that applies; a string as --smoke reads it; a collection."""
    if value is None:
        return None
    if isinstance(value, str):
        return smoke_selection(value)
    if isinstance(value, bytes) or not hasattr(value, "__iter__"):
        raise BadInput(f"smoke must be a string ('all', 'none', 'submit,array') or a "
                       f"collection of smoke test ids, not {_typed(value)}")
    names = values.words(value, said)
    return smoke_selection(",".join(names)) if names else frozenset()


@dataclass(frozen=True)
@declared
class ClusterOptions:
    address: str | None = Option(  # None: --scheduler-file, --jobqueue or the embedded default
        positional=True, nargs="?", check=values.optional_text,
        help="scheduler address (tcp://, tls://, ucx://); none: start a local cluster")
    scheduler_file: Path | None = Option(
        type=Path, metavar="FILE", check=values.optional_path, help="read the address")
    tls_ca_file: Path | None = Option(group=TLS, type=Path, metavar="FILE",
                                      check=values.optional_path, help="CA certificate (PEM)")
    tls_cert: Path | None = Option(group=TLS, type=Path, metavar="FILE",
                                   check=values.optional_path, help="client certificate (PEM)")
    tls_key: Path | None = Option(group=TLS, type=Path, metavar="FILE",
                                  check=values.optional_path, help="client private key (PEM)")
    timeout: float = Option(
        DEFAULT_TIMEOUT, type=seconds, metavar="SECONDS", check=values.seconds,
        help="limit for connecting and for each process's facts (default %(default)g)")
    smoke: frozenset[str] | None = Option(  # None: every smoke test that applies; empty: none
        metavar="LIST", check=_smoke, complete=SMOKE_WORDS,
        help="comma-separated smoke tests to run, 'all' (default: those that apply) or 'none'")
    smoke_timeout: float = Option(
        120.0, type=seconds, metavar="SECONDS", check=values.seconds,
        help="limit for each smoke test (default %(default)g)")
    bench: bool = Option(False, action="store_true", check=values.flag,
                         help="measure transfer bandwidth and NCCL all-reduce")
    workers: int | None = Option(  # of the embedded or jobqueue cluster
        type=int, metavar="N", check=values.optional_count,
        help="workers of the embedded cluster (default: one per GPU, else LocalCluster's)")
    plugins: bool = Option(True, flag="--no-plugins", action="store_false", check=values.flag,
                           help=PLUGINS_HELP)
    jobqueue: str | None = Option(  # "slurm": start the workers through dask-jobqueue
        group=JOBQUEUE, choices=("slurm",), check=values.optional_text,
        help="start --workers N through SLURMCluster")
    jobqueue_config: Path | None = Option(
        group=JOBQUEUE, type=Path, metavar="FILE", check=values.optional_path,
        help="YAML with a jobqueue: slurm: section (dask-jobqueue's own format)")
    jobqueue_options: tuple[str, ...] = Option(  # KEY=VALUE
        (), flag="--jobqueue-option", group=JOBQUEUE, action="append", metavar="KEY=VALUE",
        check=values.words,
        help="SLURMCluster argument, e.g. queue=gpu, walltime=00:30:00 (repeatable)")
    gpus_per_worker: int = Option(
        1, group=JOBQUEUE, type=int, metavar="G", check=_gpus_per_worker,
        help="GRES GPUs per jobqueue worker (default 1; 0 for CPU workers)")
    expect: ExpectOptions = field(default_factory=ExpectOptions)
    debug: bool = False  # the top-level --debug
    # a live distributed.Client of the caller's (api.py): verified as it is, left open
    client: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """The checks across fields (each field's own ran first, ``declared``)."""
        values.flag(self.debug, "debug")
        if self.client is not None:
            if self.address is not None or self.scheduler_file or self.jobqueue:
                raise BadInput("give a client or a scheduler file or a jobqueue, not more than "
                               "one")
            if getattr(self.client, "asynchronous", False):
                raise BadInput("verify_cluster needs a synchronous Client (Client(..., "
                               "asynchronous=False)); from a coroutine, call it in a thread")
        if self.address is not None and self.scheduler_file:
            raise BadInput("give a scheduler address or --scheduler-file, not both")
        if self.jobqueue:
            if self.address is not None or self.scheduler_file:
                raise BadInput("--jobqueue starts its own cluster: it needs no address")
            if self.workers is None or self.workers < 1:
                raise BadInput("--jobqueue needs --workers N (1 or more)")
        elif self.workers is not None:
            if self.address is not None or self.scheduler_file:
                raise BadInput("--workers sizes the embedded cluster: it needs no address")
            if self.workers < 1:
                raise BadInput(f"--workers must be 1 or more, not {self.workers}")

    @property
    def embedded(self) -> bool:
        """envcheck starts the cluster here (LocalCUDACluster / LocalCluster): no address, no
        scheduler file, no jobqueue and no client of the caller's. The one place this is
        decided; the pipeline asks it."""
        return (self.address is None and self.scheduler_file is None and not self.jobqueue
                and self.client is None)
