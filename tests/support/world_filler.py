"""Filler records at scale for the build benchmark's >= 50,000-record channel: made-up library
names, several versions each, every record of one Python and depending on a few others, so a
solver has a realistic haystack around the RAPIDS packages (tests/support/worlds.py)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from tests.support.world_records import PYTHONS, Record, py_record

_STEMS = (
    "arrow",
    "geo",
    "proj",
    "hdf",
    "netcdf",
    "zarr",
    "blosc",
    "lz4",
    "zstd",
    "snappy",
    "thrift",
    "grpc",
    "proto",
    "abseil",
    "re2",
    "orc",
    "parquet",
    "boost",
    "fmt",
    "spdlog",
    "gdal",
    "tiledb",
    "kealib",
    "poppler",
    "xerces",
    "curl",
    "ssh",
    "krb",
    "nghttp",
    "brotli",
    "jpeg",
    "png",
    "tiff",
    "webp",
    "heif",
    "avif",
    "openjpeg",
    "gif",
)


_SUFFIXES = ("", "-core", "-base", "-cpp", "-python", "-tools", "-utils", "-io", "-plugins")


def filler_packages(n_records: int, *, seed: int = 0, versions: int = 6) -> list[Record]:
    """About ``n_records`` records of named-like libraries: versions x Python builds, with depends.

    Each package depends on a few lower-numbered ones with version ranges, so a solve that
    touches the top ones walks a deep graph, as with conda-forge's C/C++ stack. Every range
    admits major version 3, so any set of these packages solves.
    """
    rng = random.Random(seed)
    builds_per_version = len(PYTHONS)
    names: list[str] = []
    i = 0
    while len(names) * versions * builds_per_version < n_records:
        stem = _STEMS[i % len(_STEMS)]
        suffix = _SUFFIXES[(i // len(_STEMS)) % len(_SUFFIXES)]
        generation = i // (len(_STEMS) * len(_SUFFIXES))
        # "lib" + a number keeps them apart from the world's real names (libarrow, ...)
        names.append(f"lib{stem}{suffix}{generation}")
        i += 1
    out: list[Record] = []
    for idx, name in enumerate(names):
        lower = names[max(0, idx - 200) : idx]
        picks = rng.sample(lower, min(len(lower), rng.randint(2, 5)))
        for major in range(1, versions + 1):
            v = f"{major}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
            deps = [f"{d} >={rng.randint(1, 3)},<{rng.randint(4, versions + 2)}" for d in picks]
            for py in PYTHONS:
                out.append(py_record(name, v, py, [*deps, "libgcc-ng >=12"]))
    return out


def filler_roots(records: Sequence[Record], k: int = 8) -> list[str]:
    """The ``k`` highest-numbered filler names: requesting them pulls in a deep graph."""
    names = list(dict.fromkeys(r["name"] for r in records))
    return names[-k:]
