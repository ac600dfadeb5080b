"""envcheck: provision and validate environments for multi-GPU Dask / PyTorch clusters.

``import envcheck`` imports nothing else but its version (version.py): the functions below load
their modules when first used (``envcheck.build`` imports the solver, ``envcheck.verify_cluster``
dask).
"""

from __future__ import annotations

from envcheck.version import __version__

# public name -> the module that holds it (docs/api.md)
_LAZY = {
    "build": "envcheck.api",
    "diff": "envcheck.api",
    "image": "envcheck.api",
    "install": "envcheck.api",
    "recipe_import": "envcheck.api",
    "recipe_new": "envcheck.api",
    "slurm_script": "envcheck.api",
    "verify_cluster": "envcheck.api",
    "verify_job": "envcheck.api",
    "verify_node": "envcheck.api",
    "verify_ray": "envcheck.api",
    "why": "envcheck.api",
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

__all__ = [
    "__version__",
    "BadInput",
    "build",
    "diff",
    "EnvcheckError",
    "ExitCode",
    "image",
    "install",
    "recipe_import",
    "recipe_new",
    "Report",
    "Result",
    "slurm_script",
    "StaleLock",
    "Status",
    "Unreachable",
    "Unsolvable",
    "verify_cluster",
    "verify_job",
    "verify_node",
    "verify_ray",
    "why",
]

TYPE_CHECKING = False  # typing is not imported: `import envcheck` stays cheap
if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ loads them
    from envcheck.api import (
        build,
        diff,
        image,
        install,
        recipe_import,
        recipe_new,
        slurm_script,
        verify_cluster,
        verify_job,
        verify_node,
        verify_ray,
        why,
    )
    from envcheck.errors import (
        BadInput,
        EnvcheckError,
        ExitCode,
        StaleLock,
        Unreachable,
        Unsolvable,
    )
    from envcheck.report import Report, Result, Status


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envcheck' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
