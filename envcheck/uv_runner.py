"""uv, the one way envcheck runs it: `build` resolves pip entries with `uv pip compile`
(resolve/pip.py), `install` installs a lock's wheels with `uv pip install` (provision/pip_part.py).
"""

from __future__ import annotations

import subprocess

from envcheck.errors import EnvcheckError

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Mapping


def uv_binary() -> str:
    """The uv executable the `uv` package ships; EnvcheckError (one line) without it."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        raise EnvcheckError("uv is not installed: pip install uv") from None


def uv_command(*args: str) -> list[str]:
    """``uv ARGS...`` as an argv."""
    return [uv_binary(), *args]


def run_uv(
    *args: str, timeout: float | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``uv ARGS...`` to its end, its output captured as text (the caller judges the exit
    status); subprocess.TimeoutExpired past ``timeout``."""
    return subprocess.run(uv_command(*args), capture_output=True, text=True, check=False,
                          timeout=timeout, env=None if env is None else dict(env))
