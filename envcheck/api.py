"""envcheck from Python: every verb as a function with typed keywords, returning a Report
(docs/api.md).

    import envcheck
    report = envcheck.build("recipes/rapids-24.04-el7.yaml", out="locks")
    report = envcheck.install("locks/rapids-24.04-el7.conda-lock.yml", "/opt/envs/rapids")
    report = envcheck.verify_node(expect_gpus=8, min_gpu_memory="40GiB", skip=("xid",))
    report                       # in Jupyter: a table; report.exit_code, report.to_json()

Each function builds the Options its command line builds, through the same constructor, so a
value the command refuses is refused here too (BadInput, exit code 4), and calls the same
pipeline. Failures raise EnvcheckError subclasses carrying the one-line message and the exit
code the command would give (``e.exit_code``); nothing here exits the process or prints a table.
Keywords are the command's flags with underscores (``--with`` is ``with_``, ``--not`` is
``not_``, ``--try`` is ``try_``); a flag that takes a comma-separated list takes a string so
written or a sequence of strings. A keyword left at ``DEFAULT`` takes the default its verb's
Options declare beside the flag (envcheck/option.py), the command line's; docs/api.md shows
each signature with those defaults.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar, Union

from envcheck import interrupts
from envcheck.option import DEFAULT, given
from envcheck.verify.expectations import ExpectOptions

if TYPE_CHECKING:
    from distributed import Client

    from envcheck.report import Report

PathLike = Union[str, "os.PathLike[str]"]
Words = Union[str, Iterable[str]]  # "a,b" as the flag takes it, or a sequence of strings
F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "build", "diff", "image", "install", "recipe_import", "recipe_new", "slurm_script",
    "verify_cluster", "verify_job", "verify_node", "verify_ray", "why",
]

# the expectation keywords every verify function takes: ExpectOptions' fields, ``expect`` for
# its ``file`` (the --expect flag)
EXPECT_KEYWORDS = tuple(
    "expect" if name == "file" else name for name in ExpectOptions.__options__
)


def _paths(value: PathLike | Iterable[PathLike]) -> Any:
    """One path or a sequence of them, as a tuple (anything else goes on to be refused)."""
    if isinstance(value, (str, os.PathLike)):
        return (Path(value),)
    try:
        return tuple(Path(v) for v in value)
    except TypeError:
        return value


def _words(value: Any) -> Any:
    """A comma-separated string as the flag splits it; anything else as given (the Options
    constructor checks it)."""
    from envcheck.resolve.record.new.options import comma_list

    return comma_list(value) if isinstance(value, str) else value


def _expecting(function: F) -> F:
    """``function`` (a verify function) shown as taking the expectation keywords, each at
    DEFAULT, after its own: its ``**expectations`` holds those given (``_expect``)."""
    own = inspect.signature(function)
    params = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=DEFAULT)
               for k in EXPECT_KEYWORDS]
    function.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    return function


def _expect(function: str, expectations: dict[str, Any]) -> ExpectOptions:
    """A verify function's ``**expectations`` as ExpectOptions; any other keyword is refused
    as Python refuses an unknown keyword."""
    unknown = sorted(set(expectations) - set(EXPECT_KEYWORDS))
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    from envcheck.verify.expect_options import expect_options_from_keywords

    return expect_options_from_keywords(expectations)


def build(
    recipe: PathLike | Iterable[PathLike], out: PathLike = DEFAULT, *, check: bool = DEFAULT,
    platform: str | None = DEFAULT, fetch_timeout: float = DEFAULT,
    channel_data: Iterable[str] = DEFAULT, lint: bool = DEFAULT, try_: Iterable[str] = DEFAULT,
) -> Report:
    """``envcheck build``: solve one recipe (or several) into locks under ``out``; with
    ``check=True`` solve nothing and raise StaleLock when a lock is stale; ``try_`` solves with
    each candidate added alone and writes no lock."""
    from envcheck.extras import require_build_extra

    require_build_extra("build")
    from envcheck.resolve.build.options import BuildOptions
    from envcheck.resolve.build.pipeline import build as run

    options = BuildOptions(**given(BuildOptions, locals(), recipes=_paths(recipe)))
    with interrupts.scope():
        return run(options)


def install(
    lock: PathLike, prefix: PathLike, *, platform: str | None = DEFAULT,
    cache_dir: PathLike | None = DEFAULT, force: bool = DEFAULT, lock_timeout: float = DEFAULT,
    fetch_timeout: float = DEFAULT, allow_shared_parent: bool = DEFAULT,
) -> Report:
    """``envcheck install``: create ``prefix`` from ``lock``, every package's hash checked."""
    from envcheck.provision.install.pipeline import InstallOptions, install_lock

    options = InstallOptions(**given(InstallOptions, locals()))
    with interrupts.scope():
        return install_lock(options)


def image(
    lock: PathLike, os: str, *, tag: str | None = DEFAULT,  # noqa: A002 - the flag's name
    builder_image: str | None = DEFAULT, base_image: str | None = DEFAULT,
    platform: str = DEFAULT, engine: str | None = DEFAULT, print_only: bool = DEFAULT,
    show_command: bool = True,
) -> Report:
    """``envcheck image``: build the EL7 image (``os`` rhel7 or centos7) of ``lock`` with
    podman, docker or buildah; ``print_only`` writes the build context and gives the command
    as ``report.output``; ``show_command`` echoes the command on stderr before it runs."""
    from envcheck.provision.image.options import ImageOptions
    from envcheck.provision.image.pipeline import build_image

    options = ImageOptions(**given(ImageOptions, locals(), os_name=os, show_command=show_command))
    with interrupts.scope():
        return build_image(options)


def recipe_new(
    rapids: str, cuda: str, os: str, *, out: PathLike | None = DEFAULT,  # noqa: A002 - the flag
    python: str | None = DEFAULT, toolkit: str | None = DEFAULT, libs: Words | None = DEFAULT,
    with_: Words = DEFAULT, exclude: Words = DEFAULT, exclude_reason: str = DEFAULT,
    pip: Iterable[str] = DEFAULT, name: str | None = DEFAULT, description: str = DEFAULT,
    targets: Iterable[str] = DEFAULT, channels: Words = DEFAULT,
) -> Report:
    """``envcheck recipe new``: a recipe pinned from the RAPIDS release record; its text is
    ``report.output``, or it is written to ``out``. ``pip`` and ``targets`` are sequences (one
    requirement, one machine each); a bare string is refused."""
    from envcheck.extras import require_build_extra

    require_build_extra("recipe new")
    from envcheck.resolve.record.new.options import Options
    from envcheck.resolve.record.new.pipeline import recipe_new as run

    lists = {k: _words(v) for k, v in
             (("libs", libs), ("with_", with_), ("exclude", exclude), ("channels", channels))
             if v is not DEFAULT and v is not None}
    options = Options(**given(Options, locals(), **lists))
    with interrupts.scope():
        return run(options)


def recipe_import(
    environment: PathLike, *, platform: str | None = DEFAULT, out: PathLike | None = DEFAULT,
) -> Report:
    """``envcheck recipe import``: the recipe a conda environment.yml reads as; its text is
    ``report.output``, or it is written to ``out``. ``platform``: the one to lock when the
    file names none (None: this machine's)."""
    from envcheck.resolve.recipe_import.options import ImportOptions
    from envcheck.resolve.recipe_import.pipeline import recipe_import as run

    options = ImportOptions(**given(ImportOptions, locals()))
    with interrupts.scope():
        return run(options)


def why(
    package: str, file: PathLike, *, not_: bool = DEFAULT, recipe: PathLike | None = DEFAULT,
    environment: str | None = DEFAULT, platform: str | None = DEFAULT,
    channel_data: Iterable[str] = DEFAULT,
) -> Report:
    """``envcheck why``: the chains from recipe entries to ``package`` in the lock ``file``;
    with ``not_=True``, ``file`` is a recipe that excludes ``package`` and the chains are those
    of a solve without the exclusion."""
    from envcheck.resolve.why.options import WhyOptions
    from envcheck.resolve.why.pipeline import why as run

    return run(WhyOptions(**given(WhyOptions, locals())))


def diff(
    old: PathLike, new: PathLike, *, environment: str | None = DEFAULT, markdown: bool = DEFAULT
) -> Report:
    """``envcheck diff``: what changed between two lock files, per platform; with
    ``markdown=True`` the review table is ``report.output``."""
    from envcheck.resolve.diff.options import DiffOptions
    from envcheck.resolve.diff.pipeline import diff as run

    return run(DiffOptions(**given(DiffOptions, locals())))


def slurm_script(
    *, nodes: int = DEFAULT, gpus_per_node: int = DEFAULT, cpus_per_gpu: int = DEFAULT,
    partition: str = DEFAULT, time: str = DEFAULT, account: str = DEFAULT,
    job_name: str = DEFAULT, env: PathLike = DEFAULT, lock: PathLike = DEFAULT,
    protocol: str = DEFAULT, interface: str = DEFAULT, dashboard: str = DEFAULT,
    shared_dir: PathLike = DEFAULT, wait: int = DEFAULT, verify_timeout: float = DEFAULT,
    smoke: str = DEFAULT, then: str = DEFAULT, then_on: str = DEFAULT,
    sbatch: Iterable[str] = DEFAULT, job: bool = DEFAULT, submit: bool = DEFAULT,
    submit_timeout: float | None = DEFAULT, slurm_version: str = DEFAULT,
) -> Report:
    """``envcheck slurm script``: the sbatch script (``report.output``) whose Dask cluster (or,
    with ``job=True``, whose tasks) verify themselves before ``then`` runs; ``submit=True``
    submits it, waits and returns the job's verify report. ``slurm_version`` ('17.11'...) is
    the target Slurm ('' = `sinfo --version` here, else 17.11)."""
    from envcheck.slurm.options import Options
    from envcheck.slurm.pipeline import slurm_script as run

    paths = {k: os.fspath(v) for k, v in
             (("env", env), ("lock", lock), ("shared_dir", shared_dir)) if v is not DEFAULT}
    options = Options(**given(Options, locals(), **paths))
    with interrupts.scope():
        return run(options)


# --- verify: each takes the expectation keywords (EXPECT_KEYWORDS, _expecting) --------------
#
# expect: an --expect file (YAML or TOML); keywords override it, lists add to it. Values are
# read as that file's and the flags' are (ExpectOptions' checks): min_gpu_memory="40GiB" (or
# MiB as an int), cuda="12.4" (a string), min_compute_capability="8.0", since="12h" (or
# seconds), imports/libraries/skip a sequence or "a,b". DEFAULT (or None) is not given.


@_expecting
def verify_node(
    *, facts: PathLike | None = DEFAULT, prefix: PathLike | None = DEFAULT,
    save_facts: PathLike | None = DEFAULT, plugins: bool = DEFAULT, level: int = DEFAULT,
    load_seconds: float = DEFAULT, kernel_log: PathLike | None = DEFAULT,
    **expectations: Any,
) -> Report:
    """``envcheck verify node``: this machine (or ``prefix``, an environment whose python
    collects the facts, or ``facts``, a file saved with ``save_facts``)."""
    from envcheck.verify.node.options import NodeOptions
    from envcheck.verify.node.pipeline import verify_node as run

    expect = _expect("verify_node", expectations)
    return run(NodeOptions(**given(NodeOptions, locals(), expect=expect)))


@_expecting
def verify_cluster(
    client_or_address: Client | str | None = None, *, scheduler_file: PathLike | None = DEFAULT,
    tls_ca_file: PathLike | None = DEFAULT, tls_cert: PathLike | None = DEFAULT,
    tls_key: PathLike | None = DEFAULT, timeout: float = DEFAULT,
    smoke: str | Iterable[str] | None = DEFAULT, smoke_timeout: float = DEFAULT,
    bench: bool = DEFAULT, workers: int | None = DEFAULT, plugins: bool = DEFAULT,
    jobqueue: str | None = DEFAULT, jobqueue_config: PathLike | None = DEFAULT,
    jobqueue_options: Iterable[str] = DEFAULT, gpus_per_worker: int = DEFAULT,
    debug: bool = False,
    **expectations: Any,
) -> Report:
    """``envcheck verify cluster``: facts of every process, cluster and node checks, smoke
    tests (``smoke``: None or "all", "none", "submit,array" or a collection of ids).

    ``client_or_address``: a live synchronous distributed.Client is used as it is and left
    open (neither closed nor made the default); a string is a scheduler address (tcp://,
    tls://, ucx://), connected to and closed after; None starts the embedded default (a
    LocalCUDACluster with one worker per GPU, else a LocalCluster; ``workers`` sizes it) and
    shuts it down after. This call blocks; from a coroutine on a running event loop, run it
    in a thread (asyncio.to_thread).
    """
    from envcheck.verify.cluster.options import ClusterOptions
    from envcheck.verify.cluster.pipeline import verify_cluster as run

    client = None if isinstance(client_or_address, (str, type(None))) else client_or_address
    if client is not None and not _is_client(client):
        from envcheck.errors import BadInput
        from envcheck.text import shown

        raise BadInput(f"verify_cluster takes a distributed.Client, a scheduler address (a str) "
                       f"or None, not {type(client).__name__} {shown(client)}")
    return run(ClusterOptions(**given(
        ClusterOptions, locals(), address=None if client is not None else client_or_address,
        client=client, expect=_expect("verify_cluster", expectations), debug=debug,
    )))


def _is_client(value: object) -> bool:
    """A distributed.Client (distributed is loaded already when one exists)."""
    import sys

    module = sys.modules.get("distributed")
    return module is not None and isinstance(value, module.Client)


@_expecting
def verify_job(
    *, timeout: float = DEFAULT, horovod: bool = DEFAULT, tensorflow: bool = DEFAULT,
    bench: bool = DEFAULT, debug: bool = False,
    **expectations: Any,
) -> Report:
    """``envcheck verify job`` in every task of a parallel launch (a submitit job's function,
    an srun/torchrun/mpirun task): the group forms from the launcher's environment, rank 0
    judges, and every task gets a Report with the same exit code (rank 0's is the full report;
    another rank's holds one ``job.ranks.verdict`` result carrying rank 0's line). Bounded by
    ``timeout`` per step; a rank that never arrives is named."""
    from envcheck.verify.job.options import JobOptions
    from envcheck.verify.job.pipeline import verify_job as run

    expect = _expect("verify_job", expectations)
    return run(JobOptions(**given(JobOptions, locals(), expect=expect, debug=debug)))


@_expecting
def verify_ray(
    address: str | None = None, *, timeout: float = DEFAULT, expect_nodes: int | None = DEFAULT,
    train: bool = DEFAULT, train_workers: int | None = DEFAULT,
    **expectations: Any,
) -> Report:
    """``envcheck verify ray``: a Ray cluster at ``address`` (host:port on a node of it, or
    ray://host:port), or a local one started and shut down when None; ``train`` also runs a
    Ray Train all-reduce."""
    from envcheck.verify.ray.options import RayOptions
    from envcheck.verify.ray.pipeline import verify_ray as run

    expect = _expect("verify_ray", expectations)
    return run(RayOptions(**given(RayOptions, locals(), expect=expect)))
