"""The records every generated world holds (tests/support/worlds.py): the Pythons, dask and
distributed, CUDA toolkits and the libraries around RAPIDS, built by a few record makers whose
build strings and hashes look like conda-forge's."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from tests.support.channel import pkg

Record = dict[str, Any]


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


def build_hash(*parts: object) -> str:
    """A build hash: stable, looks like conda's."""
    return "h" + hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()[:7]


def next_minor(py: str) -> str:
    major, minor = py.split(".")
    return f"{major}.{int(minor) + 1}"


def py_deps(py: str) -> list[str]:
    """What a compiled package for one Python needs: that Python and its ABI."""
    tag = py.replace(".", "")
    return [f"python >={py},<{next_minor(py)}.0a0", f"python_abi {py}.* *_cp{tag}"]


def py_record(
    name: str, version: str, py: str, deps: Iterable[str], cuda: str | None = None, number: int = 0
) -> Record:
    tag = py.replace(".", "")
    cu = f"cuda{cuda.replace('.', '')}" if cuda else ""
    build = f"{cu}py{tag}{build_hash(name, version, py, cuda)}_{number}"
    return pkg(name, version, [*py_deps(py), *deps], build, build_number=number)


def noarch_record(
    name: str, version: str, deps: Iterable[str] = (), python: str = ">=3.8"
) -> Record:
    return pkg(name, version, [f"python {python}", *deps], "pyhd8ed1ab_0", noarch="python")


def cuda_deps(cuda: str) -> list[str]:
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
        add(pkg(lib, ver, ["__glibc >=2.17,<3.0.a0"], build_hash(lib, ver) + "_0"))
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
                build_hash("python", full) + "_0_cpython",
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
            add(py_record("numpy", v, py, ["libblas >=3.9.0,<4.0a0", "libgcc-ng >=12"]))
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
                py_record(
                    "pandas", v, py, [f"numpy {np_min}", "python-dateutil >=2.8.1", "pytz >=2020.1"]
                )
            )
    for v, pys in {
        "1.9.3": ("3.8", "3.9", "3.10"),
        "1.11.4": ("3.9", "3.10", "3.11", "3.12"),
        "1.14.1": ("3.10", "3.11", "3.12", "3.13"),
    }.items():
        for py in pys:
            add(py_record("scipy", v, py, ["numpy >=1.21.6", "libblas >=3.9.0,<4.0a0"]))
    for v, pys in {
        "1.1.3": ("3.8", "3.9", "3.10"),
        "1.3.2": ("3.9", "3.10", "3.11", "3.12"),
        "1.5.2": ("3.10", "3.11", "3.12", "3.13"),
    }.items():
        for py in pys:
            add(
                py_record(
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
            add(py_record("numba", v, py, ["numpy >=1.21.6", f"llvmlite {llvm}.*"]))
            add(py_record("llvmlite", llvm, py, ["libzlib >=1.2.13,<1.3.0a0"]))
    for v, pys in {
        "10.6.0": ("3.8", "3.9", "3.10"),
        "11.6.0": ("3.8", "3.9", "3.10", "3.11"),
        "12.2.0": ("3.9", "3.10", "3.11", "3.12"),
        "13.4.1": ("3.10", "3.11", "3.12", "3.13"),
        "14.0.1": ("3.11", "3.12", "3.13"),  # cudf-cu12 26.10.2: cupy-cuda12x!=14.1.0,>=14.0.1
    }.items():
        for py in pys:
            add(py_record("cupy", v, py, ["numpy >=1.21.6", "fastrlock >=0.5", "__cuda"]))
    for v, deps in {
        "9.0.0": ["numpy >=1.21.6"],
        "10.0.1": ["numpy >=1.21.6"],
        "14.0.2": ["numpy >=1.23.5"],
        "21.0.0": ["numpy >=1.26.4"],
    }.items():
        for py in PYTHONS:
            add(py_record("pyarrow", v, py, [*deps, f"libarrow =={v}"]))
        add(
            pkg(
                "libarrow",
                v,
                ["libgcc-ng >=12", "__glibc >=2.17"],
                build_hash("libarrow", v) + "_0_cpu",
            )
        )
    for cu in ("11.2.2", "11.4.3", "11.5.1", "11.7.0", "11.8.0"):
        add(
            pkg(
                "cudatoolkit",
                cu,
                ["__glibc >=2.17,<3.0.a0"],
                build_hash("cudatoolkit", cu) + "_11",
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
                build_hash("cuda-version", cv) + "_3",
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
        add(
            pkg(
                "nccl",
                v,
                ["__glibc >=2.17", "libgcc-ng >=12", *needs],
                build_hash("nccl", v) + "_0",
            )
        )
    for v in ("1.12.1", "1.13.1", "1.14.1", "1.15.0", "1.19.0"):
        add(
            pkg(
                "ucx",
                v,
                ["libnuma >=2.0.16,<3.0a0", "ucx-proc * gpu", "__glibc >=2.17"],
                build_hash("ucx", v) + "_0",
            )
        )
    add(pkg("ucx-proc", "1.0.0", [], "gpu"))
    add(pkg("ucx-proc", "1.0.0", [], "cpu"))
    # Dask: dask-core + distributed, and the dask metapackage that pins both exactly
    for v, dist in DASK.items():
        pymin = ">=3.8" if v < "2024" else (">=3.9" if v < "2025" else ">=3.10")
        add(
            noarch_record(
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
            noarch_record(
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
            noarch_record(
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
    add(noarch_record("dask-expr", "0.4.0", ["dask-core ==2024.1.1", "pandas >=2"], ">=3.9"))
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
        add(noarch_record(name, v))
    for v in ("2.4.3", "3.1.1"):
        add(noarch_record("bokeh", v, ["jinja2 >=2.9", "numpy >=1.16", "tornado >=5.1"]))
    for v in ("0.13.0", "0.14.4", "0.16.0"):
        add(noarch_record("datashader", v, ["dask-core", "numba", "xarray", "pandas"]))
    for v in ("0.12.7", "0.14.1", "1.3.8"):
        add(noarch_record("panel", v, ["bokeh"]))
    add(noarch_record("holoviews", "1.14.6", ["panel", "bokeh"]))
    for v in ("0.11.1", "0.14.4"):
        add(noarch_record("geopandas", v, ["pandas >=1.0", "shapely", "pyproj"]))
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
            add(py_record("pytorch", v, py, [*common, *toolkit, "__cuda", "nccl >=2.12"], cu, 200))
            rec = py_record("pytorch", v, py, common, None, 100)
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
                py_record(
                    "dask-sql", v, py, [dask_spec, "distributed", "pandas >=1.4.0", "tzlocal"]
                )
            )
    add(noarch_record("tzlocal", "5.1"))
    for v in ("0.3.5", "0.4.0"):
        add(noarch_record("xarray-spatial", v, ["datashader", "numba", "xarray", "scipy"]))
    for v in ("0.11.0", "0.15.0"):
        add(
            noarch_record(
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
