"""conda-lock's models, imported on demand: build writes locks with them, and reads the records
of a lock it rewrites.

Needs the build extra (Python >= 3.10); nothing on the verify side imports this module.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

_preload: threading.Thread | None = None
_ready = False  # conda-lock's modules are imported


def _skip_conda_lock_init() -> None:
    """Let ``import conda_lock.<module>`` run without conda-lock's package ``__init__``.

    That ``__init__`` imports conda-lock's whole CLI (``conda_lock.conda_lock``: click,
    ensureconda, its vendored conda and poetry solvers), about 0.3 s, only to re-export ``main``
    and set ``__version__``; envcheck needs its lockfile models and parser. The package is
    registered from its real spec and path, so its submodules import as usual, and its
    ``__init__`` still runs, in place, the first time something asks for a name it defines.
    """
    if "conda_lock" in sys.modules:
        return
    spec = importlib.util.find_spec("conda_lock")
    if spec is None or spec.loader is None:
        return  # not installed: the import that follows raises where it can be reported
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:
        # a submodule not imported yet is the import system's business, not __init__'s
        if not name.startswith("__") and importlib.util.find_spec(f"conda_lock.{name}"):
            raise AttributeError(name)
        del package.__getattr__
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules["conda_lock"] = package


def import_conda_lock() -> None:
    _skip_conda_lock_init()
    import conda_lock.lockfile  # noqa: F401  (models, parser; pydantic: about 0.3 s)
    import conda_lock.models.channel  # noqa: F401


def preload_conda_lock() -> None:
    """Start importing conda-lock's lockfile modules in a thread, to overlap it with solving."""
    global _preload

    def work() -> None:
        # on ImportError the main thread's own import raises it where it can be reported
        with contextlib.suppress(ImportError):
            import_conda_lock()

    if _preload is None:
        _preload = threading.Thread(target=work, daemon=True)
        _preload.start()


def conda_lock_ready() -> None:
    """Import conda-lock's models, after the preload if one runs.

    Two threads importing conda-lock's circular modules at once break the import: every
    conda-lock import in envcheck waits for the preload first.
    """
    global _ready
    if _ready:
        return
    if _preload is not None:
        _preload.join()
    import_conda_lock()
    _ready = True


def parse_lockfile(path: Path) -> Any:
    """What conda-lock's ``parse_conda_lock_file`` returns, from ``load_document``'s data.

    The same steps (version check, its models, toposort) without PyYAML's pure-Python
    parser: a test compares the two models.
    """
    from envcheck.lockfile.document import load_document
    from envcheck.lockfile.toposort import toposorted

    conda_lock_ready()
    from conda_lock.lockfile import (
        Lockfile,
        LockfileV1,
        MissingLockfileVersion,
        UnknownLockfileVersion,
        lockfile_v1_to_v2,
    )

    from envcheck.inputs import MAX_LOCK_BYTES, read_text

    content = load_document(read_text(path, "lock", MAX_LOCK_BYTES), libyaml_errors=True)
    if not isinstance(content, dict):
        raise ValueError("not a mapping")
    version = content.pop("version", None)
    if version == 1:
        lockfile = lockfile_v1_to_v2(LockfileV1.model_validate(content))
    elif version == 2:
        lockfile = Lockfile.model_validate(content)
    elif version is None:
        raise MissingLockfileVersion(f"{path} is missing a version")
    else:
        raise UnknownLockfileVersion(f"{path} has unknown version {version}")
    lockfile.package = toposorted(lockfile.package)  # conda-lock's order, linear
    return lockfile


def read_lockfile_model(path: Path) -> Any:
    """conda-lock's own model of a lock file (build carries its records over); BadInput if
    unreadable."""
    from envcheck.errors import BadInput

    try:
        return parse_lockfile(path)
    except BadInput:
        raise
    except FileNotFoundError:
        raise BadInput(f"lock {path} does not exist") from None
    except Exception as e:  # yaml errors, pydantic validation, unknown versions
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{path} is not a readable conda-lock file: {first}") from None
