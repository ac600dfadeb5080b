"""The conda side of the releases the record knows from their PyPI wheels (24.06 on), where the
wheels leave a fact unknown, read from the release tags' files copied into
tests/data/rapids-record (SOURCES.tsv names each tag and commit):

* UCX: the `rapids` meta-package's run requirement ``conda-forge::ucx {{ ucx_version }}``
  (integration's versions.yaml), and the UCXX of the release (ucxx, distributed-ucxx, ucx-py,
  ucx-proc) from dask-cuda's conda test dependencies; pypi.org has no distributed-ucxx-cu12
  before UCXX 0.45 (25.08), so for 24.06-25.06 these are conda's only.
* platforms: the ARCH rows (amd64, arm64) of the conda build matrix, per CUDA major (23.08 and
  23.10 built CUDA 12 for amd64 only).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rapids_pypi import read_index, release_of
from rapids_source import Source, known, unknown

VERSIONS = "integration/{rel}/conda/recipes/versions.yaml"
META = "integration/{rel}/conda/recipes/rapids/meta.yaml"
DEPS = "dask-cuda/{rel}/dependencies.yaml"
UCX_NAMES = ("ucx-py", "ucxx", "distributed-ucxx", "ucx-proc")


def _line_no(pointer: str) -> int:
    return int(pointer.rsplit(":", 1)[1])


def conda_test_packages(data: Path, rel: str) -> dict[str, tuple[str, str]]:
    """UCX_NAMES -> (spec, pointer) among dask-cuda's test_python packages of a conda output
    (``- output_types: [conda]`` or a list naming conda), the common section."""
    src = Source(data, DEPS.format(rel=rel))
    deps = src.find(r"^dependencies:\s*$")
    head = src.find(r"^  test_python:\s*$", _line_no(deps[1])) if deps else None
    if head is None:
        return {}
    out: dict[str, tuple[str, str]] = {}
    conda = False
    for i in range(_line_no(head[1]), len(src.lines)):
        line = src.lines[i]
        if re.match(r"^  \S", line) or re.match(r"^    specific:", line):
            break
        kinds = re.match(r"^\s+- output_types:\s*\[?([^\]#]*)\]?\s*$", line)
        if kinds:
            conda = "conda" in [k.strip() for k in kinds.group(1).split(",")]
            continue
        m = re.match(r"^\s+-\s+(?:&\w+\s+)?([a-z-]+)(==|=)(\S+)\s*$", line)
        if conda and m and m.group(1) in UCX_NAMES and m.group(1) not in out:
            spec = m.group(3).replace("=", " ") if m.group(2) == "=" else m.group(3)
            spec = spec.removesuffix(",>=0.0.0a0")  # the nightlies' bound: 0.39.* says it all
            out[m.group(1)] = (spec, f"{src.rel}:{i + 1}")
    return out


def _pip_ucxx(data: Path, series: str) -> dict[str, Any]:
    """Whether pypi.org has distributed-ucxx-cu12 wheels of the UCXX ``series`` (0.NN)."""
    rel = "pypi/index/distributed-ucxx-cu12.tsv"
    src = Source(data, rel)
    rows = [w for w in read_index(data, "distributed-ucxx-cu12") if release_of(w.version)]
    mine = [w for w in rows if release_of(w.version) == series]
    if mine:
        hit = src.find(rf"^{re.escape(mine[0].filename)}\t")
        return known(f"{series}.*", *([hit[1]] if hit else []), note="distributed-ucxx-cu12")
    first = min(rows, key=lambda w: tuple(int(x) for x in w.version.split(".")), default=None)
    hit = src.find(rf"^{re.escape(first.filename)}\t") if first else None
    since = f": its first is {first.version} ({hit[1]})" if first and hit else ""
    return unknown(f"pypi.org has no distributed-ucxx-cu12 {series}{since}")


def conda_ucx(data: Path, rel: str, entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The UCX facts the wheels left unknown, from the release tag's conda files."""
    out: dict[str, dict[str, Any]] = {}
    blank = lambda f: entry.get(f, {}).get("value", "unknown") == "unknown"  # noqa: E731
    versions, meta = Source(data, VERSIONS.format(rel=rel)), Source(data, META.format(rel=rel))
    kv, run = versions.key_value("ucx_version"), meta.find(r"-\s+conda-forge::ucx \{\{ ucx_version")
    if blank("ucx") and kv and run:
        note = ("the rapids meta-package's run requirement conda-forge::ucx {{ ucx_version }} "
                "(integration's versions.yaml of the release tag)")  # fmt: skip
        out["ucx"] = known(kv[0], run[1], kv[1], note=note)
    pkgs = conda_test_packages(data, rel)
    note = "dask-cuda's conda test dependencies of the release tag"
    for name in ("ucx-py", "distributed-ucxx", "ucx-proc"):
        if name in pkgs and blank(name):
            out[name] = known(pkgs[name][0], pkgs[name][1], note=note)
    if "ucxx" in pkgs and blank("ucxx_series"):
        spec, ptr = pkgs["ucxx"]
        series = spec.removesuffix(".*")
        why = (f"{note} name ucxx {spec}: UCXX {series} is the release's (its distributed-ucxx "
               "requires the release's rapids-dask-dependency)")  # fmt: skip
        out["ucxx_series"] = known(spec, ptr, note=why)
        out["distributed-ucxx_pip"] = _pip_ucxx(data, series)
    return out


ARCHES = {"amd64": "linux-64", "arm64": "linux-aarch64"}


def matrix_platforms(src: Source, start: int = 0, stop: int | None = None) -> dict[str, Any]:
    """CUDA major -> the conda platforms a build matrix (rows with ARCH and CUDA_VER) built it
    for, with the rows' pointers."""
    plat: dict[str, list[str]] = {}
    ptrs: list[str] = []
    for i, line in enumerate(src.lines[start:stop], start + 1):
        arch = re.search(r"ARCH: '(\w+)'", line)
        cuda = re.search(r"CUDA_VER: '(\d+)\.", line)
        if arch and cuda and arch.group(1) in ARCHES:
            have = plat.setdefault(cuda.group(1), [])
            if ARCHES[arch.group(1)] not in have:
                have.append(ARCHES[arch.group(1)])
                ptrs.append(f"{src.rel}:{i}")
    if not plat:
        return unknown("no ARCH rows in the build matrix of the data")
    value = {m: sorted(p) for m, p in sorted(plat.items(), key=lambda kv: int(kv[0]))}
    note = "the conda build matrix's ARCH rows per CUDA major (amd64: linux-64, arm64: " \
        "linux-aarch64)"  # fmt: skip
    return known(value, *ptrs, note=note)


def release_platforms(data: Path, rel: str) -> dict[str, Any]:
    """'platforms': CUDA major -> conda platforms, from the release's build matrix: the
    shared workflow integration's build.yaml names (23.06-24.04), shared-workflows' of the
    release branch (24.06 on), or compute-matrix.yaml's conda-python-build section (26.06 on).
    22.08-23.04's ci/axis files name no architecture: unknown."""
    build = Source(data, f"integration/{rel}/.github/workflows/build.yaml")
    uses = build.find(r"uses: rapidsai/([\w-]+)/\.github/workflows/conda-python-build\.yaml@")
    via = [uses[1]] if uses else []
    repo = uses[0].group(1) if uses else "shared-workflows"
    src = Source(data, f"{repo}/{rel}/.github/workflows/conda-python-build.yaml")
    start, stop = 0, None
    if not src.exists():
        src = Source(data, f"shared-workflows/{rel}/.github/workflows/compute-matrix.yaml")
        head = src.find(r"^\s+conda-python-build:\s*$")
        if head is None:
            return unknown("no conda build matrix of this release in the data (22.08-23.04's "
                           "ci/axis files name no architecture)")  # fmt: skip
        start = _line_no(head[1])
        end = src.find(r"^\s+nightly:", start)
        stop = _line_no(end[1]) if end else None
    got = matrix_platforms(src, start, stop)
    return {**got, "from": [*via, *got["from"]]} if got["value"] != "unknown" else got
