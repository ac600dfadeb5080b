"""Probe children die with their parent: a child script's prologue asks the kernel (Linux
PR_SET_PDEATHSIG) to SIGKILL it when the process that started it dies, SIGKILL included, as
the solver child does (envcheck/resolve/_solve_child.py).

The prologue is Python source run first by the child's own interpreter (any Python >= 3.0, in
any environment: the facts package imports nothing of envcheck's). A parent already gone when
the prologue ran (it died between fork and prctl) ends the child at once. Elsewhere than Linux
prctl is missing and the prologue does nothing: the parent's own cleanup is all there is.

The death signal follows the thread that started the child: a child is started by the thread
that waits for it (every probe here is).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    import subprocess

_PROLOGUE = """\
import os as _envcheck_os
try:
    import ctypes as _envcheck_ctypes
    _envcheck_ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    del _envcheck_ctypes
except Exception:
    pass
if _envcheck_os.getppid() != {parent}:
    _envcheck_os._exit(0)
del _envcheck_os
"""


def dies_with_parent(script: str) -> str:
    """``script`` (a child's ``python -c`` source) run by a child that dies with this process."""
    return _PROLOGUE.format(parent=os.getpid()) + script


def start_probe(
    python: str, script: str, args: tuple[str, ...], *, told: bool = False
) -> subprocess.Popen | None:
    """``python -c script args`` (this interpreter when ``python`` is ''), dying with this
    process, its output piped as text, its stdin a pipe when it is ``told`` something (else
    nothing); None when it cannot start (the caller names that)."""
    import subprocess

    try:
        return subprocess.Popen(
            [python or sys.executable, "-c", dies_with_parent(script), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if told else subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # a Ctrl-C at the terminal reaches the caller only
        )
    except OSError:
        return None
