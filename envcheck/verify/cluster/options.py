"""What `verify cluster` is asked to do, as one typed object (from flags or keyword arguments).

Validated when built: a bad combination is BadInput before anything connects or starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.text import shown
from envcheck.verify.cluster.connect import DEFAULT_TIMEOUT
from envcheck.verify.expectations import ExpectOptions

DEFAULT_SMOKE_TIMEOUT = 120.0


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


@dataclass(frozen=True)
class ClusterOptions:
    address: str | None = None  # None: --scheduler-file, --jobqueue or the embedded default
    scheduler_file: Path | None = None
    tls_ca_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    timeout: float = DEFAULT_TIMEOUT  # connecting, and each process's facts
    # None: every smoke test that applies; empty: none. A string is read as --smoke reads it.
    smoke: None | str | frozenset[str] = None
    smoke_timeout: float = DEFAULT_SMOKE_TIMEOUT
    bench: bool = False
    workers: int | None = None  # of the embedded or jobqueue cluster
    plugins: bool = True
    jobqueue: str | None = None  # "slurm": start the workers through dask-jobqueue
    jobqueue_config: Path | None = None
    jobqueue_options: tuple[str, ...] = ()  # KEY=VALUE
    gpus_per_worker: int = 1
    expect: ExpectOptions = field(default_factory=ExpectOptions)
    debug: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.smoke, str):
            object.__setattr__(self, "smoke", smoke_selection(self.smoke))
        elif self.smoke is not None:
            if isinstance(self.smoke, bytes) or not hasattr(self.smoke, "__iter__"):
                raise BadInput(f"smoke must be a string ('all', 'none', 'submit,array') or a "
                               f"collection of smoke test ids, not {_typed(self.smoke)}")
            names = values.words(self.smoke, "smoke")
            object.__setattr__(self, "smoke", smoke_selection(",".join(names)) if names
                               else frozenset())
        self._validate()

    def _validate(self) -> None:
        set_ = object.__setattr__
        set_(self, "timeout", values.seconds(self.timeout, "--timeout"))
        set_(self, "smoke_timeout", values.seconds(self.smoke_timeout, "--smoke-timeout"))
        set_(self, "jobqueue_options", values.words(self.jobqueue_options, "--jobqueue-option"))
        for name in ("address", "jobqueue"):
            values.optional_text(getattr(self, name), "--" + name.replace("_", "-"))
        for name in ("scheduler_file", "tls_ca_file", "tls_cert", "tls_key", "jobqueue_config"):
            flag = "--" + name.replace("_", "-")
            set_(self, name, values.optional_path(getattr(self, name), flag))
        values.optional_count(self.workers, "--workers")
        values.count(self.gpus_per_worker, "--gpus-per-worker", least=0)
        for name in ("bench", "plugins", "debug"):
            values.flag(getattr(self, name), name)
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
        """envcheck starts the cluster here (LocalCUDACluster / LocalCluster)."""
        return self.address is None and self.scheduler_file is None and not self.jobqueue
