"""What a node is expected to provide (Expectations, what every check reads) and what the user
gave for it (ExpectOptions: flags or an --expect file), with what a conda-lock implies.

`verify node`, `verify cluster` and `verify job` share the flags (verify/expect_options.py), so
a cluster is judged worker by worker against the same expectations as one machine; that module
turns options, the file and the lock into Expectations, never from an argparse Namespace.
"""

from __future__ import annotations

import re
from pathlib import Path

from envcheck.lockfile.names import KEY_MODULES
from envcheck.record import field_names, frozen, replace

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

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

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(mib|mb|m|gib|gb|g|tib|tb|t)?\s*$", re.I)


def parse_size_mib(text: str) -> int:
    """'40GiB', '80G', '16000MiB', '16000' (MiB) -> MiB. Decimal and binary units both mean
    binary here: people write 80G for an 80 GB card whose NVML total is 81920 MiB."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a memory size: {text!r} (use e.g. 40GiB or 16000MiB)")
    factor = {"": 1, "m": 1, "g": 1024, "t": 1024 * 1024}[(m[2] or "")[:1].lower()]
    return int(float(m[1]) * factor)


@frozen
class ExpectOptions:
    """What the user asked for, before defaults, the --expect file and the lock are applied.

    None (or an empty tuple) = not given: then the --expect file's value, else the default.
    Built from flags (expect_options_from_args), from keyword arguments (verify/api.py), or
    from a file (verify/expect_file.py): each key of the file is one of these fields.
    """

    file: Path | None = None  # --expect FILE
    lock: Path | None = None
    expect_gpus: int | None = None
    expect_gpu_model: str | None = None
    min_gpu_memory: int | None = None  # MiB
    allow_busy_gpus: bool | None = None
    cuda: str | None = None
    min_glibc: str | None = None
    min_compute_capability: tuple[int, int] | None = None
    imports: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    expect_ucx: bool | None = None
    since: float | None = None  # seconds
    ecc_corrected_threshold: int | None = None
    probe_timeout: float | None = None
    skip: tuple[str, ...] = ()  # check ids (verify/catalog.py)


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


DEFAULT_PROBE_TIMEOUT = 60.0
DEFAULT_ECC_THRESHOLD = 100


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
