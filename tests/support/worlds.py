"""Generated conda channels shaped like real RAPIDS releases, for tests and benchmarks only.

Conda channels cannot be reached from the machines that run these tests, so tests solve
against worlds built here. Release pins come from real release data copied into tests/data
(each Release says where); the rest (build strings, hashes, the minor packages' versions
and depends) is shape, not data. Nothing solved against a world may go into locks/.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.channel import pkg, write_channel

Record = dict[str, Any]


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

PYTHONS = {
    "3.8": "3.8.13",
    "3.9": "3.9.13",
    "3.10": "3.10.12",
    "3.11": "3.11.9",
    "3.12": "3.12.7",
    "3.13": "3.13.1",
}
# dask-core/dask version -> distributed version that ships with it
DASK = {
    "2022.7.1": "2022.7.1",
    "2022.11.1": "2022.11.1",
    "2023.3.2": "2023.3.2.1",
    "2024.1.1": "2024.1.1",
    "2026.7.1": "2026.7.1",
    "2026.8.0": "2026.8.0",
}


def _h(*parts: object) -> str:
    """A build hash: stable, looks like conda's."""
    return "h" + hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()[:7]


def _next_minor(py: str) -> str:
    major, minor = py.split(".")
    return f"{major}.{int(minor) + 1}"


def _py(py: str) -> list[str]:
    """What a compiled package for one Python needs: that Python and its ABI."""
    tag = py.replace(".", "")
    return [f"python >={py},<{_next_minor(py)}.0a0", f"python_abi {py}.* *_cp{tag}"]


def _pybuild(
    name: str, version: str, py: str, deps: Iterable[str], cuda: str | None = None, number: int = 0
) -> Record:
    tag = py.replace(".", "")
    cu = f"cuda{cuda.replace('.', '')}" if cuda else ""
    build = f"{cu}py{tag}{_h(name, version, py, cuda)}_{number}"
    return pkg(name, version, [*_py(py), *deps], build, build_number=number)


def _noarch(name: str, version: str, deps: Iterable[str] = (), python: str = ">=3.8") -> Record:
    return pkg(name, version, [f"python {python}", *deps], "pyhd8ed1ab_0", noarch="python")


def _cuda_deps(cuda: str) -> list[str]:
    """How a CUDA build pins its toolkit: cudatoolkit before CUDA 12's cuda-version packages."""
    major = cuda.split(".")[0]
    if cuda.startswith("11.") and cuda != "11.8":
        return [f"cudatoolkit {cuda}.*", "__cuda"]
    return [f"cuda-version >={cuda},<{int(major) + 1}", "__cuda"]


def base_packages() -> list[Record]:
    """Pythons, the numeric stack, Dask, PyTorch, and the small packages they need."""
    out: list[Record] = []
    add = out.append
    for lib, ver in [
        ("libgcc-ng", "13.2.0"),
        ("libstdcxx-ng", "13.2.0"),
        ("libzlib", "1.2.13"),
        ("openssl", "3.1.4"),
        ("libffi", "3.4.2"),
        ("libblas", "3.9.0"),
        ("libnuma", "2.0.16"),
        ("_openmp_mutex", "4.5"),
    ]:
        add(pkg(lib, ver, ["__glibc >=2.17,<3.0.a0"], _h(lib, ver) + "_0"))
    for short, full in PYTHONS.items():
        add(
            pkg(
                "python",
                full,
                [
                    "__glibc >=2.17,<3.0.a0",
                    "libzlib >=1.2.13,<1.3.0a0",
                    "openssl >=3.1,<4.0a0",
                    "libffi >=3.4,<4.0a0",
                ],
                _h("python", full) + "_0_cpython",
            )
        )
        add(
            pkg(
                "python_abi",
                short,
                [],
                f"4_cp{short.replace('.', '')}",
                constrains=[f"python {short}.* *_cpython"],
            )
        )
    numpy = {
        "1.21.6": ("3.8", "3.9", "3.10"),
        "1.22.4": ("3.8", "3.9", "3.10"),
        "1.23.5": ("3.8", "3.9", "3.10", "3.11"),
        "1.24.4": ("3.8", "3.9", "3.10", "3.11"),
        "1.26.4": ("3.9", "3.10", "3.11", "3.12"),
        "2.1.3": ("3.10", "3.11", "3.12", "3.13"),
        "2.2.6": ("3.10", "3.11", "3.12", "3.13"),
    }
    for v, pys in numpy.items():
        for py in pys:
            add(_pybuild("numpy", v, py, ["libblas >=3.9.0,<4.0a0", "libgcc-ng >=12"]))
    pandas = {
        "1.4.4": ("3.8", "3.9", "3.10", ">=1.21.6"),
        "1.5.3": ("3.8", "3.9", "3.10", "3.11", ">=1.21.6"),
        "2.0.3": ("3.9", "3.10", "3.11", ">=1.23.5"),
        "2.1.4": ("3.9", "3.10", "3.11", "3.12", ">=1.23.5"),
        "2.2.3": ("3.10", "3.11", "3.12", "3.13", ">=1.26.4"),
        "3.0.0": ("3.11", "3.12", "3.13", ">=1.26.4"),  # cudf-cu12 26.10.2: pandas<3.1.0,>=3.0.0
    }
    for v, (*pys, np_min) in pandas.items():
        for py in pys:
            add(
                _pybuild(
                    "pandas", v, py, [f"numpy {np_min}", "python-dateutil >=2.8.1", "pytz >=2020.1"]
                )
            )
    for v, pys in {
        "1.9.3": ("3.8", "3.9", "3.10"),
        "1.11.4": ("3.9", "3.10", "3.11", "3.12"),
        "1.14.1": ("3.10", "3.11", "3.12", "3.13"),
    }.items():
        for py in pys:
            add(_pybuild("scipy", v, py, ["numpy >=1.21.6", "libblas >=3.9.0,<4.0a0"]))
    for v, pys in {
        "1.1.3": ("3.8", "3.9", "3.10"),
        "1.3.2": ("3.9", "3.10", "3.11", "3.12"),
        "1.5.2": ("3.10", "3.11", "3.12", "3.13"),
    }.items():
        for py in pys:
            add(
                _pybuild(
                    "scikit-learn",
                    v,
                    py,
                    ["numpy >=1.21.6", "scipy", "joblib >=1.1.1", "threadpoolctl >=2.0.0"],
                )
            )
    for v, pys in {
        "0.55.2": ("3.8", "3.9", "3.10"),
        "0.56.4": ("3.8", "3.9", "3.10", "3.11"),
        "0.59.1": ("3.9", "3.10", "3.11", "3.12"),
        "0.61.2": ("3.10", "3.11", "3.12", "3.13"),
    }.items():
        for py in pys:
            llvm = {"0.55.2": "0.38.1", "0.56.4": "0.39.1", "0.59.1": "0.42.0", "0.61.2": "0.44.0"}[
                v
            ]
            add(_pybuild("numba", v, py, ["numpy >=1.21.6", f"llvmlite {llvm}.*"]))
            add(_pybuild("llvmlite", llvm, py, ["libzlib >=1.2.13,<1.3.0a0"]))
    for v, pys in {
        "10.6.0": ("3.8", "3.9", "3.10"),
        "11.6.0": ("3.8", "3.9", "3.10", "3.11"),
        "12.2.0": ("3.9", "3.10", "3.11", "3.12"),
        "13.4.1": ("3.10", "3.11", "3.12", "3.13"),
        "14.0.1": ("3.11", "3.12", "3.13"),  # cudf-cu12 26.10.2: cupy-cuda12x!=14.1.0,>=14.0.1
    }.items():
        for py in pys:
            add(_pybuild("cupy", v, py, ["numpy >=1.21.6", "fastrlock >=0.5", "__cuda"]))
    for v, deps in {
        "9.0.0": ["numpy >=1.21.6"],
        "10.0.1": ["numpy >=1.21.6"],
        "14.0.2": ["numpy >=1.23.5"],
        "21.0.0": ["numpy >=1.26.4"],
    }.items():
        for py in PYTHONS:
            add(_pybuild("pyarrow", v, py, [*deps, f"libarrow =={v}"]))
        add(pkg("libarrow", v, ["libgcc-ng >=12", "__glibc >=2.17"], _h("libarrow", v) + "_0_cpu"))
    for cu in ("11.2.2", "11.4.3", "11.5.1", "11.7.0", "11.8.0"):
        add(
            pkg(
                "cudatoolkit",
                cu,
                ["__glibc >=2.17,<3.0.a0"],
                _h("cudatoolkit", cu) + "_11",
                constrains=["__cuda >=11"],
            )
        )
    for cv in ("11.2", "11.5", "11.8", "12.0", "12.2", "12.6", "12.9", "13.0"):
        major = cv.split(".")[0]
        toolkit = [f"cudatoolkit {cv}|{cv}.*"] if major == "11" else []
        add(
            pkg(
                "cuda-version",
                cv,
                [],
                _h("cuda-version", cv) + "_3",
                noarch="generic",
                constrains=[*toolkit, f"__cuda >={major}"],
            )
        )
    for v, needs in {
        "2.12.12.1": ["cudatoolkit >=11.2,<12"],
        "2.14.3.1": ["cudatoolkit >=11.2,<12"],
        "2.19.3.1": ["cuda-version >=11.8,<12"],
        "2.21.5.1": ["cuda-version >=12,<13"],
        "2.27.7.1": ["cuda-version >=12,<14"],
    }.items():
        add(pkg("nccl", v, ["__glibc >=2.17", "libgcc-ng >=12", *needs], _h("nccl", v) + "_0"))
    for v in ("1.12.1", "1.13.1", "1.14.1", "1.15.0", "1.19.0"):
        add(
            pkg(
                "ucx",
                v,
                ["libnuma >=2.0.16,<3.0a0", "ucx-proc * gpu", "__glibc >=2.17"],
                _h("ucx", v) + "_0",
            )
        )
    add(pkg("ucx-proc", "1.0.0", [], "gpu"))
    add(pkg("ucx-proc", "1.0.0", [], "cpu"))
    # Dask: dask-core + distributed, and the dask metapackage that pins both exactly
    for v, dist in DASK.items():
        pymin = ">=3.8" if v < "2024" else (">=3.9" if v < "2025" else ">=3.10")
        add(
            _noarch(
                "dask-core",
                v,
                [
                    "cloudpickle >=1.5.0",
                    "fsspec >=2021.09.0",
                    "toolz >=0.10.0",
                    "pyyaml >=5.3.1",
                    "partd >=1.2.0",
                    "packaging >=20.0",
                    "click >=8.1",
                ],
                pymin,
            )
        )
        add(
            _noarch(
                "distributed",
                dist,
                [
                    f"dask-core =={v}",
                    "tornado >=6.0.4",
                    "psutil >=5.7.2",
                    "msgpack-python >=1.0.0",
                    "zict >=2.2.0",
                    "tblib >=1.6.0",
                ],
                pymin,
            )
        )
        add(
            _noarch(
                "dask",
                v,
                [
                    f"dask-core =={v}",
                    f"distributed =={dist}",
                    "numpy >=1.21",
                    "pandas >=1.3",
                    "bokeh >=2.4.2",
                ],
                pymin,
            )
        )
    add(_noarch("dask-expr", "0.4.0", ["dask-core ==2024.1.1", "pandas >=2"], ">=3.9"))
    for name, v in [
        ("cloudpickle", "2.2.1"),
        ("fsspec", "2023.6.0"),
        ("toolz", "0.12.0"),
        ("pyyaml", "6.0.1"),
        ("partd", "1.4.1"),
        ("packaging", "23.2"),
        ("click", "8.1.7"),
        ("tornado", "6.3.3"),
        ("psutil", "5.9.5"),
        ("msgpack-python", "1.0.7"),
        ("zict", "3.0.0"),
        ("tblib", "2.0.0"),
        ("python-dateutil", "2.8.2"),
        ("pytz", "2023.3"),
        ("joblib", "1.3.2"),
        ("threadpoolctl", "3.2.0"),
        ("fastrlock", "0.8.2"),
        ("tabulate", "0.9.0"),
        ("tqdm", "4.66.1"),
        ("pynvml", "11.4.1"),
        ("xarray", "2023.6.0"),
        ("shapely", "2.0.2"),
        ("pyproj", "3.4.1"),
        ("jinja2", "3.1.2"),
        ("cachetools", "5.3.1"),
        ("scikit-image", "0.19.3"),
        ("networkx", "2.6.3"),
        ("filelock", "3.12.4"),
        ("sympy", "1.12"),
        ("typing-extensions", "4.8.0"),
        ("cuda-python", "11.8.1"),
        ("pyarrow-hotfix", "0.6"),
        ("nvtx", "0.2.8"),
        ("treelite", "3.2.0"),
    ]:
        add(_noarch(name, v))
    for v in ("2.4.3", "3.1.1"):
        add(_noarch("bokeh", v, ["jinja2 >=2.9", "numpy >=1.16", "tornado >=5.1"]))
    for v in ("0.13.0", "0.14.4", "0.16.0"):
        add(_noarch("datashader", v, ["dask-core", "numba", "xarray", "pandas"]))
    for v in ("0.12.7", "0.14.1", "1.3.8"):
        add(_noarch("panel", v, ["bokeh"]))
    add(_noarch("holoviews", "1.14.6", ["panel", "bokeh"]))
    for v in ("0.11.1", "0.14.4"):
        add(_noarch("geopandas", v, ["pandas >=1.0", "shapely", "pyproj"]))
    # PyTorch: CUDA builds need the toolkit and a driver; the newest need glibc 2.28
    torch = [
        ("1.11.0", "11.2", ("3.8", "3.9", "3.10"), "2.17"),
        ("1.13.1", "11.2", ("3.8", "3.9", "3.10"), "2.17"),
        ("2.0.0", "11.2", ("3.8", "3.9", "3.10", "3.11"), "2.17"),
        ("2.1.2", "11.8", ("3.9", "3.10", "3.11"), "2.17"),
        ("2.3.1", "12.0", ("3.9", "3.10", "3.11", "3.12"), "2.17"),
        ("2.5.1", "12.6", ("3.10", "3.11", "3.12", "3.13"), "2.28"),
    ]
    for v, cu, pys, glibc in torch:
        toolkit = (
            [f"cudatoolkit >={cu},<12"]
            if cu.startswith("11.") and cu != "11.8"
            else [f"cuda-version >={cu},<{int(cu.split('.')[0]) + 1}"]
        )
        for py in pys:
            common = [
                "filelock",
                "sympy",
                "typing-extensions",
                "networkx",
                "numpy >=1.21.6",
                f"__glibc >={glibc}",
            ]
            add(_pybuild("pytorch", v, py, [*common, *toolkit, "__cuda", "nccl >=2.12"], cu, 200))
            rec = _pybuild("pytorch", v, py, common, None, 100)
            rec["build"] = "cpu_generic_" + rec["build"]
            add(rec)
    for v, dask_max in (
        ("2022.8.0", "<=2022.8.1"),
        ("2023.4.0", "<=2023.4.1"),
        ("2024.3.0", ">=2024.1.1"),
        ("2024.5.0", ">=2024.1.1"),
    ):
        dask_spec = f"dask-core {dask_max}" + (",>=2022.3.0" if "<" in dask_max else "")
        for py in ("3.8", "3.9", "3.10", "3.11"):
            add(
                _pybuild("dask-sql", v, py, [dask_spec, "distributed", "pandas >=1.4.0", "tzlocal"])
            )
    add(_noarch("tzlocal", "5.1"))
    for v in ("0.3.5", "0.4.0"):
        add(_noarch("xarray-spatial", v, ["datashader", "numba", "xarray", "scipy"]))
    for v in ("0.11.0", "0.15.0"):
        add(
            _noarch(
                "skorch",
                v,
                [
                    "pytorch",
                    "scikit-learn >=0.22.0",
                    "scipy >=1.1.0",
                    "tabulate >=0.7.7",
                    "tqdm >=4.14.0",
                ],
            )
        )
    return out


def release_packages(r: Release) -> list[Record]:
    """One RAPIDS release: its libraries per Python and CUDA, with its real pins as depends."""
    out: list[Record] = []
    add = out.append
    v = f"{r.version}.00"
    dask = [f"dask =={r.dask}", f"distributed =={r.distributed}"]
    glibc = f"__glibc >={r.glibc}"
    comm_name, comm_version = r.ucx.split()
    for cuda in r.cudas:
        toolkit = _cuda_deps(cuda)
        major = cuda.split(".")[0]
        for lib in ("librmm", "libcudf", "libcuml", "libcugraph", "libcuspatial"):
            deps = [*toolkit, glibc, "libgcc-ng >=12"]
            if lib != "librmm":
                deps.append(f"librmm =={v}")
            add(pkg(lib, v, deps, f"cuda{major}_{_h(lib, v, cuda)}_0"))
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
                build = f"cuda{cuda.split('.')[0]}_py{tag}_g{_h(name, version, py, cuda)[1:]}_0"
                add(pkg(name, version, [*_py(py), *toolkit, glibc, *deps], build))

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
            _pybuild(
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
            _pybuild(
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


# --- scale: the benchmark's >= 50,000 records ----------------------------------------------

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
                out.append(_pybuild(name, v, py, [*deps, "libgcc-ng >=12"]))
    return out


def filler_roots(records: Sequence[Record], k: int = 8) -> list[str]:
    """The ``k`` highest-numbered filler names: requesting them pulls in a deep graph."""
    names = list(dict.fromkeys(r["name"] for r in records))
    return names[-k:]
