"""Name tables shared by build, install and verify: one copy each, so they cannot drift."""

from __future__ import annotations

import re

# a conda package's name, lower-cased; a recipe's name (and so its lock's file name,
# NAME.conda-lock.yml) is held to it too, in recipe files and `recipe new --name`
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

# conda platform -> the machine architecture of its binaries (wheel tags, __archspec, ELF)
PLATFORM_ARCH: dict[str, str] = {
    "linux-64": "x86_64",
    "linux-aarch64": "aarch64",
    "linux-ppc64le": "ppc64le",
}

# conda package name -> the PyPI project (dist-info) name it installs, where the two differ
CONDA_TO_PYPI: dict[str, str] = {
    "pytorch": "torch",
    "py-xgboost": "xgboost",
    "dask-core": "dask",
    "matplotlib-base": "matplotlib",
    "msgpack-python": "msgpack",
}

# Lock package name -> the top-level module a job imports. Packages in a lock that appear here
# are "key packages": their import is probed in a fresh process (catches missing OS libraries).
KEY_MODULES: dict[str, str] = {
    "python": "",  # nothing to import; listed so it is not mistaken for a gap
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "dask": "dask",
    "distributed": "distributed",
    "dask-cuda": "dask_cuda",
    "pytorch": "torch",
    "torch": "torch",
    "cupy": "cupy",
    "cupy-cuda12x": "cupy",
    "cupy-cuda13x": "cupy",
    "numba": "numba",
    "xgboost": "xgboost",
    "scikit-learn": "sklearn",
    "cudf": "cudf",
    "cudf-cu12": "cudf",
    "dask-cudf": "dask_cudf",
    "cuml": "cuml",
    "cugraph": "cugraph",
    "rmm": "rmm",
    "ucx-py": "ucp",
    "ucxx": "ucxx",
    "distributed-ucxx": "distributed_ucxx",
}


def pypi_name(conda_name: str) -> str:
    """The PyPI project a conda package installs (its own name unless the table says else)."""
    return CONDA_TO_PYPI.get(conda_name, conda_name)


def conda_names_of(pypi: str) -> tuple[str, ...]:
    """conda package names other than ``pypi`` itself that install the PyPI project ``pypi``."""
    return tuple(c for c, p in CONDA_TO_PYPI.items() if p == pypi and c != pypi)


_SEPARATORS = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 name normalisation, also right for conda names (already lower-case, dashes)."""
    return _SEPARATORS.sub("-", name).lower()
