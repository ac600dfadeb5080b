"""Expectations as the user gives them: the flags, an --expect file, the check ids to skip,
then a --lock; read and validated here into the Expectations every check takes."""

from __future__ import annotations

import argparse

from envcheck import option
from envcheck.record import replace
from envcheck.verify.expectations import (
    DEFAULT_ECC_THRESHOLD,
    DEFAULT_PROBE_TIMEOUT,
    Expectations,
    ExpectOptions,
    implied_by_lock,
    merged,
)

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from envcheck.lockfile.model import LockedPackage

# The lock and --expect file readers and the check catalog are imported only when a --lock,
# an --expect file or a --skip is given: `verify node` with none of them does not pay for them.


def add_expectation_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ExpectOptions declares, and --list-checks."""
    option.add_arguments(parser, ExpectOptions)
    parser.add_argument(
        "--list-checks",
        action="store_true",
        help="list every check and smoke test (id, kind, description) and exit",
    )


def expect_options_from_args(args: argparse.Namespace) -> ExpectOptions:
    """The expectation flags as given (None where not given); nothing is read yet."""
    return option.from_args(ExpectOptions, args)


def expect_options_from_keywords(keywords: dict[str, Any]) -> ExpectOptions:
    """The API's expectation keywords (envcheck.verify_node(expect_gpus=8, ...)): read as an
    --expect file's values are (sizes as "40GiB", versions as strings, lists for imports/
    libraries/skip), so a script and a file say things alike; ``expect`` is the --expect file.
    A keyword left at DEFAULT (or None) is not given."""
    return ExpectOptions(**option.given(ExpectOptions, keywords, file=keywords.get("expect")))


def expectations_from_options(opts: ExpectOptions) -> Expectations:
    """The --expect file, then the flags over it, then a --lock adds what it implies (CUDA,
    glibc, key imports, libraries, UCX). Bad values are BadInput naming the flag or key."""
    if opts.file is not None:
        from envcheck.verify.expect_file import read_expect_file

        opts = merged(read_expect_file(opts.file), replace(opts, file=None))
    probe_timeout = DEFAULT_PROBE_TIMEOUT if opts.probe_timeout is None else opts.probe_timeout
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


def _validate_skip(ids: tuple[str, ...]) -> frozenset:
    """catalog.validate_skip, the catalog imported only when there are ids to check."""
    if not any(ids):
        return frozenset()
    from envcheck.verify.catalog import validate_skip

    return validate_skip(ids)
