"""Generated conda channels shaped like real RAPIDS releases, for tests and benchmarks only.

Conda channels cannot be reached from the machines that run these tests, so tests solve
against worlds built here. Release pins come from real release data copied into tests/data
(each Release says where); the rest (build strings, hashes, the minor packages' versions
and depends) is shape, not data. Nothing solved against a world may go into locks/.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.channel import pkg, write_channel
from tests.support.world_records import (
    Record,
    base_packages,
    build_hash,
    cuda_deps,
    py_deps,
    py_record,
)


@dataclass(frozen=True)
class Release:
    """What one RAPIDS release requires of the packages around it."""

    version: str  # "22.08"
    pythons: tuple[str, ...]  # "3.9"
    dask: str  # exact versions, as RAPIDS pins them
    distributed: str
    xgboost: str
    ucx: str  # the comm package RAPIDS ships for Dask: "ucx-py 0.27" or "distributed-ucxx 0.52"
    numpy: str  # match-spec version ranges
    pandas: str
    cudas: tuple[str, ...]  # toolkit versions built for
    glibc: str  # the oldest glibc its binaries load on
    cusignal: bool = True  # cusignal was retired after 23.08
    source: str = ""


# Where each pin comes from (files in tests/data):
#   V  = rapidsai-integration_versions.yaml_22.08-24.02.txt (line numbers below)
#   L  = ryan-williams_torch-cuml-gpu-segfault_README_conda-list_rapids-22.12.txt
#   P  = pypi/*.METADATA (real wheel metadata of rapids-dask-dependency and dask-cuda)
RELEASES: dict[str, Release] = {
    r.version: r
    for r in (
        Release(
            "22.08",
            ("3.8", "3.9"),
            dask="2022.7.1",  # V:55
            distributed="2022.7.1",  # V:59
            xgboost="1.6.0dev.rapidsai22.08",  # V:13 plus the minor version (metapkg line 137)
            ucx="ucx-py 0.27",  # L shows 0.29 for 22.12; one ucx-py minor per RAPIDS release
            numpy=">=1.19,<1.23",  # V:121
            pandas=">=1.0,<1.5.0dev0",  # V:127
            cudas=("11.2", "11.4", "11.5"),
            glibc="2.17",  # V:27 sysroot_version
            source="versions.yaml branch-22.08",
        ),
        Release(
            "22.12",
            ("3.8", "3.9"),
            dask="2022.11.1",  # V:234
            distributed="2022.11.1",  # V:238
            xgboost="1.7.1dev.rapidsai22.12",  # V:192
            ucx="ucx-py 0.29",  # L: ucx-py 0.29.00
            numpy=">=1.19",  # V:300
            pandas=">=1.0,<1.6.0dev0",  # V:306
            cudas=("11.2", "11.5", "11.7"),  # L: cudatoolkit 11.7.0
            glibc="2.17",  # V:206
            source="versions.yaml branch-22.12; conda list of a 22.12 environment",
        ),
        Release(
            "23.04",
            ("3.8", "3.10"),
            dask="2023.3.2",  # V:415
            distributed="2023.3.2.1",  # V:419
            xgboost="1.7.5dev.rapidsai23.04",  # V:373
            ucx="ucx-py 0.31",
            numpy=">=1.21",  # V:485
            pandas=">=1.3,<1.6.0dev0",  # V:491
            cudas=("11.2", "11.5", "11.8"),
            glibc="2.17",  # V:387
            source="versions.yaml branch-23.04",
        ),
        Release(
            "24.04",
            ("3.9", "3.10", "3.11"),  # P: dask-cuda 24.4.0 classifiers
            dask="2024.1.1",  # P: rapids-dask-dependency 24.4.1 'dask ==2024.1.1'
            distributed="2024.1.1",  # P: same file
            xgboost="2.0.3",  # V:576 (branch-24.02, the newest versions.yaml in the data)
            ucx="ucx-py 0.37",  # P: dask-cuda 24.4.0 'ucx-py ==0.37.*'
            numpy=">=1.23,<2.0a0",  # P: dask-cuda 24.4.0
            pandas=">=2.0,<2.2.2dev0",
            cudas=("11.8", "12.0", "12.2"),
            glibc="2.17",  # RAPIDS support notice 37 removes CentOS 7 (glibc 2.17) in 24.06
            cusignal=False,
            source="PyPI metadata of rapids-dask-dependency 24.4.1 and dask-cuda 24.4.0",
        ),
        Release(
            "26.10",
            ("3.11", "3.12", "3.13"),  # P: dask-cuda 26.10.0 classifiers (3.14 too)
            dask="2026.7.1",  # P: rapids-dask-dependency 26.10.0 'dask<2026.7.2,>=2026.7.1'
            distributed="2026.7.1",
            xgboost="3.1.3",
            ucx="distributed-ucxx 0.52",  # P: dask-cuda 26.10.0 'distributed-ucxx-cu12==0.52.*'
            numpy=">=2.0,<3.0",  # P: dask-cuda 26.10.0
            pandas=">=3.0.0,<3.1.0",  # rapids-record/pypi: cudf-cu12 26.10.2
            cudas=("12.9", "13.0"),
            glibc="2.28",  # P: dask-cuda 26.10.0 wheel tag manylinux_2_28
            cusignal=False,
            source="PyPI metadata of rapids-dask-dependency 26.10.0 and dask-cuda 26.10.0",
        ),
    )
}

# 28 recipe entries that install with any 22.x/23.x release: the haystack around culprits
NEUTRAL = [
    "python=3.8", "numpy", "scipy", "scikit-learn", "numba", "cupy", "bokeh", "datashader",
    "panel", "holoviews", "geopandas", "xarray", "pyarrow", "tqdm", "tabulate", "pynvml",
    "zict", "click", "fsspec", "toolz", "cloudpickle", "pyyaml", "partd", "packaging",
    "tornado", "psutil", "networkx", "jinja2",
]  # fmt: skip


def release_packages(r: Release) -> list[Record]:
    """One RAPIDS release: its libraries per Python and CUDA, with its real pins as depends."""
    out: list[Record] = []
    add = out.append
    v = f"{r.version}.00"
    dask = [f"dask =={r.dask}", f"distributed =={r.distributed}"]
    glibc = f"__glibc >={r.glibc}"
    comm_name, comm_version = r.ucx.split()
    for cuda in r.cudas:
        toolkit = cuda_deps(cuda)
        major = cuda.split(".")[0]
        for lib in ("librmm", "libcudf", "libcuml", "libcugraph", "libcuspatial"):
            deps = [*toolkit, glibc, "libgcc-ng >=12"]
            if lib != "librmm":
                deps.append(f"librmm =={v}")
            add(pkg(lib, v, deps, f"cuda{major}_{build_hash(lib, v, cuda)}_0"))
        for py in r.pythons:

            def lib(
                name: str,
                deps: Sequence[str],
                version: str = v,
                py: str = py,
                cuda: str = cuda,
                toolkit: list[str] = toolkit,
            ) -> None:
                tag = py.replace(".", "")
                build = (
                    f"cuda{cuda.split('.')[0]}_py{tag}_g{build_hash(name, version, py, cuda)[1:]}_0"
                )
                add(pkg(name, version, [*py_deps(py), *toolkit, glibc, *deps], build))

            lib("rmm", [f"librmm =={v}", "numpy", "cuda-python >=11.5"])
            lib(
                "cudf",
                [
                    f"libcudf =={v}",
                    f"rmm =={v}",
                    f"numpy {r.numpy}",
                    f"pandas {r.pandas}",
                    "cupy >=9.5.0",
                    "numba >=0.54",
                    "pyarrow",
                    "fsspec >=0.6.0",
                ],
            )
            lib("dask-cudf", [f"cudf =={v}", *dask, "fsspec >=0.6.0"])
            lib(
                "cuml",
                [
                    f"libcuml =={v}",
                    f"cudf =={v}",
                    f"dask-cudf =={v}",
                    *dask,
                    "treelite",
                    "scipy",
                    "joblib >=0.11",
                    "nccl >=2.9.9,<3.0a0",
                ],
            )
            lib("pylibcugraph", [f"libcugraph =={v}", f"rmm =={v}"])
            lib(
                "cugraph",
                [
                    f"libcugraph =={v}",
                    f"pylibcugraph =={v}",
                    f"cudf =={v}",
                    f"dask-cudf =={v}",
                    *dask,
                    "networkx",
                    "cupy >=9.5.0",
                    f"{comm_name} {comm_version}.*",
                ],
            )
            lib("cuspatial", [f"libcuspatial =={v}", f"cudf =={v}", "geopandas >=0.11.0"])
            lib(
                "cuxfilter",
                [f"cudf =={v}", f"dask-cudf =={v}", "bokeh", "datashader", "panel", "holoviews"],
            )
            lib("cucim", ["cupy >=9.5.0", "numpy", "scikit-image >=0.19.0", "click"])
            if r.cusignal:
                lib("cusignal", ["cupy >=9.5.0", "numba >=0.54", "scipy >=1.6.0"])
            lib("xgboost", ["nccl >=2.9.9,<3.0a0", "numpy", "scipy"], r.xgboost)
            lib("rapids-xgboost", [f"xgboost =={r.xgboost}", "nccl >=2.9.9,<3.0a0"])
    for py in r.pythons:
        # dask-cuda is pure Python: one build per Python, for every CUDA
        add(
            py_record(
                "dask-cuda",
                v,
                py,
                [
                    *dask,
                    f"numpy {r.numpy}",
                    "pandas >=1.3",
                    "pynvml >=11.0.0",
                    "zict >=2.0.0",
                    "click >=8.1",
                ],
            )
        )
        add(
            py_record(
                comm_name,
                f"{comm_version}.00",
                py,
                [
                    "ucx >=1.14.1" if r.version >= "24" else "ucx >=1.12.1",
                    "numpy",
                    "pynvml",
                    *(dask if comm_name == "distributed-ucxx" else []),
                ],
            )
        )
    return out


def world_packages(releases: Iterable[Release] = RELEASES.values()) -> list[Record]:
    out = base_packages()
    for r in releases:
        out.extend(release_packages(r))
    return out


def write_world(
    root: Path, releases: Iterable[Release] = RELEASES.values(), extra: Iterable[Record] = ()
) -> str:
    """Write a world channel under ``root``; return its file:// URL."""
    return write_channel(Path(root), [*world_packages(releases), *extra])
