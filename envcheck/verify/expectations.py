"""What a node is expected to provide (Expectations, what every check reads) and what the user
gave for it (ExpectOptions: each field declared once as an Option, its flag, help and reader
beside it), with what a conda-lock implies.

`verify node`, `verify cluster`, `verify job` and `verify ray` share the flags, and api.py's
verify functions the keywords, so a cluster is judged worker by worker against the same
expectations as one machine; verify/expect_options.py turns options, the --expect file and the
lock into Expectations.
"""

from __future__ import annotations

import re
from pathlib import Path

from envcheck.lockfile.names import KEY_MODULES
from envcheck.option import Option, declared
from envcheck.record import field_names, frozen, replace
from envcheck.verify import expect_values as v

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable

    from envcheck.lockfile.model import LockedPackage


@frozen
class Expectations:
    expect_gpus: int | None = None  # GPUs a job must see (after CUDA_VISIBLE_DEVICES)
    expect_gpu_model: str = ""  # case-insensitive substring of the NVML name ("A100")
    min_memory_mib: int = 0  # per visible GPU
    allow_busy_gpus: bool = False  # foreign processes on a GPU: warn instead of fail
    cuda: str = ""  # CUDA version the environment was built for ("11.8")
    min_glibc: str = ""  # "2.17"
    min_compute_capability: tuple[int, int] | None = None
    lock_path: str = ""
    lock_packages: tuple[LockedPackage, ...] = ()
    import_modules: tuple[str, ...] = ()  # must import in a fresh interpreter
    libraries: tuple[str, ...] = ()  # must resolve through the dynamic loader
    expect_ucx: bool = False
    probe_timeout: float = 60.0
    # (pid, what it is) of processes that are not foreign on a GPU although they are not this
    # process's descendants: verify cluster, job and ray put the process tree of every
    # worker, rank, scheduler and client on the host here (across/owners.py).
    known_processes: tuple[tuple[int, str], ...] = ()
    # health checks
    xid_since_seconds: float | None = None  # only Xid events this recent count (--since)
    ecc_corrected_threshold: int = 100  # volatile correctable ECC errors before a warning
    # check and smoke test ids not to run (--skip; verify/catalog.py validated them)
    skip: frozenset = frozenset()

    @property
    def expects_gpus(self) -> bool:
        return bool(self.expect_gpus) or bool(self.expect_gpu_model) or self.min_memory_mib > 0

    @property
    def known_pids(self) -> frozenset[int]:
        """The pids of known_processes."""
        return frozenset(pid for pid, _ in self.known_processes)


# Lock package -> shared library that must then resolve from this environment.
KEY_LIBRARIES: dict[str, str] = {
    "nccl": "libnccl.so.2",
    "libopenblas": "libopenblas.so.0",
    "openblas": "libopenblas.so.0",
}

# Lock packages that mean the environment wants UCX for Dask communication.
UCX_PACKAGES = ("ucx", "ucx-py", "ucxx", "distributed-ucxx", "libucx")

GROUP = "expectations"
_GPUS_HELP = ("GPUs a job must see; 0: expect none (CUDA_VISIBLE_DEVICES hides them on purpose)."
              " Unset while NVML sees GPUs that a job would not: a warning")
_SKIP_HELP = ("checks and smoke tests not to run (repeatable; ids: --list-checks); each is "
              "reported as skipped. Skipping a probe's check also skips its probe: --skip "
              "tensorflow saves TensorFlow's import (~3 s) and its MirroredStrategy child")
DEFAULT_PROBE_TIMEOUT = 60.0
DEFAULT_ECC_THRESHOLD = 100


def _expectation(read: Callable[[Any], Any], **argparse: Any) -> Any:
    """An expectation flag: None (not given) by default, read by ``read`` however it comes."""
    return Option(None, group=GROUP, check=v.check(read), **argparse)


def _names(flag: str, metavar: str, about: str) -> Any:
    """A repeatable flag of comma-separated names; () when not given."""
    return Option((), flag=flag, group=GROUP, check=v.check(v.names, ()), action="append",
                  metavar=metavar, help=about)


@frozen
@declared
class ExpectOptions:
    """What the user asked for, before defaults, the --expect file and the lock are applied;
    each field declared once, its flag, help and reader beside it (envcheck/option.py).

    None (or an empty tuple) = not given: then the --expect file's value, else the default.
    Built from flags (expect_options_from_args), from keyword arguments (api.py), or from a
    file (verify/expect_file.py): each key of the file is one of these flags without dashes.
    """

    file: Path | None = Option(
        flag="--expect", group=GROUP, type=Path, metavar="FILE", check=v.check(v.path),
        help="expectations for this node type from a YAML or TOML file, one key per flag "
        "below (envcheck docs expect); flags given as well override it, repeatable ones add to "
        "it")
    lock: Path | None = _expectation(
        v.path, metavar="FILE", help="lock the env must match: a conda-lock file, a pixi.lock "
        "(its default environment) or a conda explicit file")
    expect_gpus: int | None = _expectation(v.integer, type=int, metavar="N", help=_GPUS_HELP)
    expect_gpu_model: str | None = _expectation(v.text, metavar="TEXT", help="e.g. A100, H200")
    min_gpu_memory: int | None = _expectation(  # MiB
        v.size, metavar="SIZE", help="per GPU, e.g. 40GiB")
    allow_busy_gpus: bool | None = _expectation(
        v.boolean, action="store_true",
        help="another user's process on a GPU is a warning, not a failure")
    cuda: str | None = _expectation(v.version, metavar="X.Y", help="CUDA version needed")
    min_glibc: str | None = _expectation(v.version, metavar="X.Y", help="glibc needed")
    min_compute_capability: tuple[int, int] | None = _expectation(
        v.compute_capability, metavar="X.Y", help="oldest GPU arch needed")
    imports: tuple[str, ...] = _names(
        "--import", "MODULE[,MODULE]", "modules that must import in a fresh process (repeatable)")
    libraries: tuple[str, ...] = _names(
        "--library", "NAME[,NAME]", "shared libraries that must resolve: nccl, openblas, cuda, "
        "libfoo.so.1 (repeatable)")
    expect_ucx: bool | None = _expectation(
        v.boolean, action="store_true", help="UCX must be usable by Dask")
    since: float | None = _expectation(  # seconds
        v.duration, metavar="DURATION", help="only Xid kernel-log events this recent count: "
        "90s, 30m, 12h, 2d (default: since boot)")
    ecc_corrected_threshold: int | None = _expectation(
        v.integer, type=int, metavar="N", help="correctable ECC errors since the driver loaded "
        f"before a warning (default {DEFAULT_ECC_THRESHOLD})")
    probe_timeout: float | None = _expectation(
        v.seconds, type=float, metavar="SECONDS",
        help=f"limit for each import / library probe (default {DEFAULT_PROBE_TIMEOUT:g})")
    skip: tuple[str, ...] = _names("--skip", "ID[,ID]", _SKIP_HELP)  # check ids (catalog.py)


# Fields whose values add up (the file's, then the flags'); every other field: flags override.
LIST_FIELDS = ("imports", "libraries", "skip")


def merged(base: ExpectOptions, over: ExpectOptions) -> ExpectOptions:
    """`over` (the flags) on top of `base` (a file): given scalars win, lists add up."""
    changes: dict[str, Any] = {}
    for name in field_names(ExpectOptions):
        mine = getattr(over, name)
        if name in LIST_FIELDS:
            changes[name] = tuple(dict.fromkeys((*getattr(base, name), *mine)))
        elif mine is not None:
            changes[name] = mine
    return replace(base, **changes)


def _lower_bound(spec: str) -> str:
    """'>=2.17,<3.0.a0' -> '2.17'; '' when the spec sets no lower bound."""
    m = re.search(r">=\s*(\d+(?:\.\d+)*)", spec)
    return m[1] if m else ""


def version_tuple(text: str) -> tuple[int, ...]:
    """'525.60.13' -> (525, 60, 13); non-numeric parts are dropped ('2.28.a0' -> (2, 28))."""
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0])[:4])


def implied_by_lock(locked: tuple[LockedPackage, ...]) -> dict:
    """CUDA, glibc, key modules, libraries and UCX that a lock's contents require."""
    by_name = {p.name: p for p in locked}
    cuda = ""
    if "cuda-version" in by_name:  # conda-forge pins the CUDA of a whole env with this
        cuda = ".".join(by_name["cuda-version"].version.split(".")[:2])
    elif "cudatoolkit" in by_name:
        cuda = ".".join(by_name["cudatoolkit"].version.split(".")[:2])
    glibc = ""
    for p in locked:
        virtual = dict(p.virtual)
        if "__glibc" in virtual:
            low = _lower_bound(virtual["__glibc"])
            if low and version_tuple(low) > version_tuple(glibc):
                glibc = low
        if not cuda and virtual.get("__cuda"):
            cuda = _lower_bound(virtual["__cuda"])
    modules = [KEY_MODULES[p.name] for p in locked if KEY_MODULES.get(p.name)]
    libraries = [KEY_LIBRARIES[p.name] for p in locked if p.name in KEY_LIBRARIES]
    return {
        "cuda": cuda,
        "glibc": glibc,
        "modules": list(dict.fromkeys(modules)),
        "libraries": list(dict.fromkeys(libraries)),
        "ucx": any(p.name in UCX_PACKAGES for p in locked),
    }
