"""What a node is expected to provide: from flags, from an --expect file, from a conda-lock.

`verify node` and `verify cluster` share these flags (add_expectation_arguments) so a cluster
is judged worker by worker against the same expectations as one machine. Flags become an
ExpectOptions (what was given), and expectations_from_options turns that, the --expect file
and the lock into Expectations (what the checks read): never from an argparse Namespace.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput
from envcheck.flags import seconds
from envcheck.lockfile.model import LockedPackage
from envcheck.lockfile.names import KEY_MODULES
from envcheck.lockfile.read import read_packages


@dataclass(frozen=True)
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
    # pids that are not foreign on a GPU although they are not this process's descendants:
    # verify cluster puts every worker and nanny of the cluster here.
    known_pids: frozenset[int] = frozenset()
    # health checks
    xid_since_seconds: float | None = None  # only Xid events this recent count (--since)
    ecc_corrected_threshold: int = 100  # volatile correctable ECC errors before a warning
    # check and smoke test ids not to run (--skip; verify/catalog.py validated them)
    skip: frozenset = frozenset()

    @property
    def expects_gpus(self) -> bool:
        return bool(self.expect_gpus) or bool(self.expect_gpu_model) or self.min_memory_mib > 0


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


def _version_arg(text: str) -> str:
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        raise argparse.ArgumentTypeError(f"not a version: {text!r}")
    return text


def _cc_arg(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a compute capability: {text!r} (use e.g. 7.0)")
    return int(m[1]), int(m[2])


def _duration_arg(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 90s, 30m, 12h, 2d)")
    return float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m[2]]


def _size_arg(text: str) -> int:
    try:
        return parse_size_mib(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


@dataclass(frozen=True)
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
    for f in fields(ExpectOptions):
        mine = getattr(over, f.name)
        if f.name in LIST_FIELDS:
            changes[f.name] = tuple(dict.fromkeys((*getattr(base, f.name), *mine)))
        elif mine is not None:
            changes[f.name] = mine
    return replace(base, **changes)


def add_expectation_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("expectations")
    g.add_argument(
        "--expect",
        type=Path,
        metavar="FILE",
        help="expectations for this node type from a YAML or TOML file, one key per flag "
        "below (docs/expect/); flags given as well override it, repeatable ones add to it",
    )
    g.add_argument("--lock", type=Path, metavar="FILE", help="conda-lock file the env must match")
    _add_gpu_expectations(g)
    _add_probe_and_health_expectations(g)
    g.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="ID[,ID]",
        help="checks and smoke tests not to run (repeatable; ids: --list-checks); each is "
        "reported as skipped",
    )
    parser.add_argument(
        "--list-checks",
        action="store_true",
        help="list every check and smoke test (id, kind, description) and exit",
    )


def _add_gpu_expectations(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--expect-gpus",
        type=int,
        metavar="N",
        help="GPUs a job must see; 0: expect none (CUDA_VISIBLE_DEVICES hides them on purpose)."
        " Unset while NVML sees GPUs that a job would not: a warning",
    )
    g.add_argument("--expect-gpu-model", metavar="TEXT", help="e.g. A100, H200")
    g.add_argument("--min-gpu-memory", type=_size_arg, metavar="SIZE", help="per GPU, e.g. 40GiB")
    g.add_argument(
        "--allow-busy-gpus",
        action="store_true",
        default=None,
        help="another user's process on a GPU is a warning, not a failure",
    )
    g.add_argument("--cuda", type=_version_arg, metavar="X.Y", help="CUDA version needed")
    g.add_argument("--min-glibc", type=_version_arg, metavar="X.Y", help="glibc needed")
    g.add_argument(
        "--min-compute-capability", type=_cc_arg, metavar="X.Y", help="oldest GPU arch needed"
    )


def _add_probe_and_health_expectations(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="module that must import in a fresh process (repeatable)",
    )
    g.add_argument(
        "--library",
        dest="libraries",
        action="append",
        default=[],
        metavar="NAME",
        help="shared library that must resolve: nccl, openblas, cuda, libfoo.so.1 (repeatable)",
    )
    g.add_argument(
        "--expect-ucx", action="store_true", default=None, help="UCX must be usable by Dask"
    )
    g.add_argument(
        "--since",
        type=_duration_arg,
        metavar="DURATION",
        help="only Xid kernel-log events this recent count: 90s, 30m, 12h, 2d (default: since "
        "boot)",
    )
    g.add_argument(
        "--ecc-corrected-threshold",
        type=int,
        metavar="N",
        help=f"correctable ECC errors since the driver loaded before a warning (default "
        f"{DEFAULT_ECC_THRESHOLD})",
    )
    g.add_argument(
        "--probe-timeout",
        type=seconds,
        metavar="SECONDS",
        help=f"limit for each import / library probe (default {DEFAULT_PROBE_TIMEOUT:g})",
    )


def expect_options_from_args(args: argparse.Namespace) -> ExpectOptions:
    """The expectation flags as given (None where not given); nothing is read yet."""
    from envcheck.verify.catalog import parse_skip

    return ExpectOptions(
        file=args.expect,
        lock=args.lock,
        expect_gpus=args.expect_gpus,
        expect_gpu_model=args.expect_gpu_model,
        min_gpu_memory=args.min_gpu_memory,
        allow_busy_gpus=args.allow_busy_gpus,
        cuda=args.cuda,
        min_glibc=args.min_glibc,
        min_compute_capability=args.min_compute_capability,
        imports=tuple(args.imports),
        libraries=tuple(args.libraries),
        expect_ucx=args.expect_ucx,
        since=args.since,
        ecc_corrected_threshold=args.ecc_corrected_threshold,
        probe_timeout=args.probe_timeout,
        skip=parse_skip(args.skip),
    )


DEFAULT_PROBE_TIMEOUT = 60.0
DEFAULT_ECC_THRESHOLD = 100


def expectations_from_options(opts: ExpectOptions) -> Expectations:
    """The --expect file, then the flags over it, then a --lock adds what it implies (CUDA,
    glibc, key imports, libraries, UCX). Bad values are BadInput naming the flag or key."""
    from envcheck.verify.catalog import validate_skip

    if opts.file is not None:
        from envcheck.verify.expect_file import read_expect_file

        opts = merged(read_expect_file(opts.file), replace(opts, file=None))
    if opts.expect_gpus is not None and opts.expect_gpus < 0:
        raise BadInput(f"--expect-gpus must be 0 or more, not {opts.expect_gpus}")
    probe_timeout = DEFAULT_PROBE_TIMEOUT if opts.probe_timeout is None else opts.probe_timeout
    if probe_timeout <= 0:
        raise BadInput(f"--probe-timeout must be positive, not {probe_timeout:g}")
    locked: tuple[LockedPackage, ...] = ()
    if opts.lock is not None:
        locked = read_packages(opts.lock)
    implied = implied_by_lock(locked)
    libraries = list(opts.libraries) + implied["libraries"]
    cuda = opts.cuda or implied["cuda"]
    if cuda or opts.expect_gpus:  # a CUDA build, or GPUs expected: the driver's libcuda must load
        libraries.append("libcuda.so.1")
    ecc = opts.ecc_corrected_threshold
    return Expectations(
        expect_gpus=opts.expect_gpus,
        expect_gpu_model=opts.expect_gpu_model or "",
        min_memory_mib=opts.min_gpu_memory or 0,
        allow_busy_gpus=bool(opts.allow_busy_gpus),
        cuda=cuda,
        min_glibc=opts.min_glibc or implied["glibc"],
        min_compute_capability=opts.min_compute_capability,
        lock_path=str(opts.lock) if opts.lock else "",
        lock_packages=locked,
        import_modules=tuple(dict.fromkeys(list(opts.imports) + implied["modules"])),
        libraries=tuple(dict.fromkeys(libraries)),
        expect_ucx=bool(opts.expect_ucx) or implied["ucx"],
        probe_timeout=probe_timeout,
        xid_since_seconds=opts.since,
        ecc_corrected_threshold=DEFAULT_ECC_THRESHOLD if ecc is None else ecc,
        skip=validate_skip(opts.skip),
    )


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
