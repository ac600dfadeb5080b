"""Expectations as the user gives them: the flags, an --expect file, the check ids to skip,
then a --lock; read and validated here into the Expectations every check takes."""

from __future__ import annotations

import argparse
import re
from os import PathLike, fspath
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.flags import seconds
from envcheck.record import replace
from envcheck.verify.expectations import (
    DEFAULT_ECC_THRESHOLD,
    DEFAULT_PROBE_TIMEOUT,
    Expectations,
    ExpectOptions,
    implied_by_lock,
    merged,
    parse_size_mib,
)

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from envcheck.lockfile.model import LockedPackage

# The lock and --expect file readers and the check catalog are imported only when a --lock,
# an --expect file or a --skip is given: `verify node` with none of them does not pay for them.


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
    g.add_argument(
        "--expect",
        type=Path,
        metavar="FILE",
        help="expectations for this node type from a YAML or TOML file, one key per flag "
        "below (envcheck docs expect); flags given as well override it, repeatable ones add to it",
    )
    g.add_argument("--lock", type=Path, metavar="FILE", help="lock the env must match: a "
                   "conda-lock file, a pixi.lock (its default environment) or a conda explicit "
                   "file")
    _add_gpu_expectations(g)
    _add_probe_and_health_expectations(g)
    g.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="ID[,ID]",
        help="checks and smoke tests not to run (repeatable; ids: --list-checks); each is "
        "reported as skipped. Skipping a probe's check also skips its probe: --skip tensorflow "
        "saves TensorFlow's import (~3 s) and its MirroredStrategy child",
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
        metavar="MODULE[,MODULE]",
        help="modules that must import in a fresh process (repeatable)",
    )
    g.add_argument(
        "--library",
        dest="libraries",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="shared libraries that must resolve: nccl, openblas, cuda, libfoo.so.1 "
        "(repeatable)",
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
        imports=_each(args.imports),
        libraries=_each(args.libraries),
        expect_ucx=args.expect_ucx,
        since=args.since,
        ecc_corrected_threshold=args.ecc_corrected_threshold,
        probe_timeout=args.probe_timeout,
        skip=_parse_skip(args.skip),
    )


def expectations_from_options(opts: ExpectOptions) -> Expectations:
    """The --expect file, then the flags over it, then a --lock adds what it implies (CUDA,
    glibc, key imports, libraries, UCX). Bad values are BadInput naming the flag or key."""
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
        from envcheck.lockfile import read_lock

        locked = read_lock(opts.lock).packages
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
        skip=_validate_skip(opts.skip),
    )


def _each(values: list[str]) -> tuple[str, ...]:
    """`--import a,b --import c` -> ('a', 'b', 'c'), as an --expect file's `import: a,b` reads:
    blanks dropped, first occurrence kept (no module or library name holds a comma)."""
    return tuple(dict.fromkeys(w.strip() for v in values for w in v.split(",") if w.strip()))


def _parse_skip(values: list[str]) -> tuple:
    """catalog.parse_skip, the catalog imported only when --skip is given."""
    if not values:
        return ()
    from envcheck.verify.catalog import parse_skip

    return parse_skip(values)


def _validate_skip(ids: tuple[str, ...]) -> frozenset:
    """catalog.validate_skip, the catalog imported only when there are ids to check."""
    if not any(ids):
        return frozenset()
    from envcheck.verify.catalog import validate_skip

    return validate_skip(ids)


def expect_options_from_keywords(given: dict[str, Any]) -> ExpectOptions:
    """Keyword arguments (envcheck.verify_node(expect_gpus=8, ...)) read as an --expect file's
    values are (sizes as "40GiB", versions as strings, lists for imports/libraries/skip), so a
    script and a file say things alike; ``expect`` is the --expect file. None: not given."""
    from envcheck.verify.expect_file import KEYS, Wrong

    readers = {field: (key, read) for key, (field, read) in KEYS.items()}
    out: dict[str, Any] = {}
    for name, value in given.items():
        if value is None or (name in ("imports", "libraries", "skip") and value == ()):
            continue
        if name == "expect":
            out["file"] = Path(value)
            continue
        _, read = readers[name]
        if name == "lock" and isinstance(value, PathLike):
            value = fspath(value)
        if name in ("imports", "libraries", "skip") and isinstance(value, (tuple, set, frozenset)):
            value = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
        try:
            out[name] = read(value)
        except Wrong as e:
            raise BadInput(f"{name} must be {e}, not {type(value).__name__} {value!r}") from None
    if isinstance(out.get("lock"), str):
        out["lock"] = Path(out["lock"])
    return ExpectOptions(**out)
