"""What a node is expected to provide: from flags and from a conda-lock file.

`verify node` and `verify cluster` share these flags (add_expectation_arguments) so a cluster
is judged worker by worker against the same expectations as one machine.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

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


def add_expectation_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("expectations")
    g.add_argument("--lock", type=Path, metavar="FILE", help="conda-lock file the env must match")
    g.add_argument(
        "--expect-gpus",
        type=int,
        metavar="N",
        help="GPUs a job must see; 0: expect none (CUDA_VISIBLE_DEVICES hides them on purpose)."
        " Unset while NVML sees GPUs that a job would not: a warning",
    )
    g.add_argument("--expect-gpu-model", default="", metavar="TEXT", help="e.g. A100, H200")
    g.add_argument(
        "--min-gpu-memory", type=_size_arg, default=0, metavar="SIZE", help="per GPU, e.g. 40GiB"
    )
    g.add_argument(
        "--allow-busy-gpus",
        action="store_true",
        help="another user's process on a GPU is a warning, not a failure",
    )
    g.add_argument("--cuda", type=_version_arg, metavar="X.Y", help="CUDA version needed")
    g.add_argument("--min-glibc", type=_version_arg, metavar="X.Y", help="glibc needed")
    g.add_argument(
        "--min-compute-capability", type=_cc_arg, metavar="X.Y", help="oldest GPU arch needed"
    )
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
    g.add_argument("--expect-ucx", action="store_true", help="UCX must be usable by Dask")
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
        default=100,
        metavar="N",
        help="correctable ECC errors since the driver loaded before a warning (default 100)",
    )
    g.add_argument(
        "--probe-timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="limit for each import / library probe (default 60)",
    )


def expectations_from_args(args: argparse.Namespace) -> Expectations:
    """Flags first; a --lock adds what it implies (CUDA, glibc, key imports, libraries, UCX)."""
    if args.expect_gpus is not None and args.expect_gpus < 0:
        raise BadInput(f"--expect-gpus must be 0 or more, not {args.expect_gpus}")
    if args.probe_timeout <= 0:
        raise BadInput(f"--probe-timeout must be positive, not {args.probe_timeout:g}")
    locked: tuple[LockedPackage, ...] = ()
    if args.lock is not None:
        locked = read_packages(args.lock)
    implied = implied_by_lock(locked)
    libraries = list(args.libraries) + implied["libraries"]
    cuda = args.cuda or implied["cuda"]
    if cuda or args.expect_gpus:  # a CUDA build, or GPUs expected: the driver's libcuda must load
        libraries.append("libcuda.so.1")
    return Expectations(
        expect_gpus=args.expect_gpus,
        expect_gpu_model=args.expect_gpu_model,
        min_memory_mib=args.min_gpu_memory,
        allow_busy_gpus=args.allow_busy_gpus,
        cuda=cuda,
        min_glibc=args.min_glibc or implied["glibc"],
        min_compute_capability=args.min_compute_capability,
        lock_path=str(args.lock) if args.lock else "",
        lock_packages=locked,
        import_modules=tuple(dict.fromkeys(list(args.imports) + implied["modules"])),
        libraries=tuple(dict.fromkeys(libraries)),
        expect_ucx=args.expect_ucx or implied["ucx"],
        probe_timeout=args.probe_timeout,
        xid_since_seconds=getattr(args, "since", None),
        ecc_corrected_threshold=getattr(args, "ecc_corrected_threshold", 100),
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
