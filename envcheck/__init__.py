"""envcheck: provision and validate environments for multi-GPU Dask / PyTorch clusters.

``import envcheck`` imports nothing else: the functions below load their modules when first
used (``envcheck.build`` imports the solver, ``envcheck.verify_cluster`` dask).
"""

from __future__ import annotations

__version__ = "0.1.0"

# public name -> the module that holds it (docs/api.md)
_LAZY = {
    "build": "envcheck.api",
    "install": "envcheck.api",
    "recipe_new": "envcheck.api",
    "verify_node": "envcheck.verify.api",
    "verify_cluster": "envcheck.verify.api",
    "verify_job": "envcheck.verify.api",
    "verify_ray": "envcheck.verify.api",
    "Report": "envcheck.report",
    "Result": "envcheck.report",
    "Status": "envcheck.report",
    "EnvcheckError": "envcheck.errors",
    "BadInput": "envcheck.errors",
    "Unsolvable": "envcheck.errors",
    "StaleLock": "envcheck.errors",
    "Unreachable": "envcheck.errors",
    "ExitCode": "envcheck.errors",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envcheck' has no attribute {name!r}")
    import importlib

    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        raise AttributeError(f"envcheck.{name}: this envcheck has no {module}") from None
    value = getattr(found, name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
