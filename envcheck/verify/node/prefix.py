"""Facts of an environment envcheck is not installed in: a conda prefix or a venv.

The environment's own interpreter runs the standard-library collector (the facts package, as
verify/shipping.py's standalone source on stdin) with ``-I``, so it sees its own site-packages
and conda-meta and nothing of envcheck's environment; its import and library probes run under
that interpreter too. Nothing is
installed into the environment and nothing in it changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path

from envcheck.errors import BadInput, EnvcheckError
from envcheck.verify.bounded import Unreadable, read_facts
from envcheck.verify.facts import NodeFacts

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

# The collector's own work beyond the probes (a cold interpreter, NVML, ucx_info).
_OVERHEAD_SECONDS = 60.0
MIN_PYTHON = (3, 8)  # the collector's oldest Python (the verify side's floor)
MAX_OUTPUT = 64 << 20  # facts of a 10,000-package environment are about 2 MiB


def interpreter(prefix: Path) -> Path:
    """The environment's python: bin/python or bin/python3 of a venv or conda prefix."""
    if not prefix.is_dir():
        raise BadInput(f"--prefix: no such directory: {prefix}")
    for name in ("python", "python3"):
        candidate = prefix / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BadInput(
        f"--prefix {prefix}: no Python interpreter in it (looked for bin/python, bin/python3): "
        "not a conda environment or venv"
    )


def collect_prefix_facts(
    prefix: Path,
    import_modules: tuple[str, ...] = (),
    libraries: tuple[str, ...] = (),
    probe_timeout: float = 60.0,
    tensorflow: bool | None = None,
) -> NodeFacts:
    """NodeFacts as the environment at ``prefix`` sees itself, from its own interpreter
    (``tensorflow``: collect_node_facts' tensorflow_probe)."""
    from envcheck.verify.shipping import standalone_source  # --prefix only

    python = interpreter(prefix)
    _check_version(prefix, python)
    kwargs: dict[str, Any] = {
        "import_modules": list(import_modules),
        "libraries": list(libraries),
        "probe_timeout": probe_timeout,
        **({"tensorflow_probe": tensorflow} if tensorflow is not None else {}),
    }
    limit = _OVERHEAD_SECONDS + (probe_timeout if import_modules or libraries else 0.0)
    # the script on stdin ("-"): it loads the package and prints the facts as one JSON line,
    # collected with the keyword arguments in argv[1]
    rc, out, err = run_bounded(prefix, [str(python), "-I", "-", json.dumps(kwargs)],
                               standalone_source(), limit)
    if rc != 0:
        raise BadInput(f"--prefix {prefix}: {_failure(python, err)}")
    try:
        return read_facts(out, "its output")
    except Unreadable as e:
        raise EnvcheckError(f"--prefix {prefix}: unreadable facts from {python} ({e})") from None


# Works on every Python that might sit in an old prefix, 2.7 included (no -I there).
_VERSION = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"


def _check_version(prefix: Path, python: Path) -> None:
    """Name an interpreter too old for the collector, rather than show its error for -I."""
    rc, out, err = run_bounded(prefix, [str(python), "-E", "-s", "-c", _VERSION], "", 30.0)
    try:
        version = tuple(int(x) for x in out.strip().split("."))
    except ValueError:
        last = (err.strip().splitlines() or ["no version"])[-1][:300]
        raise BadInput(f"--prefix {prefix}: {python} is not a Python interpreter ({last})") \
            from None
    if rc == 0 and version < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        raise BadInput(f"--prefix {prefix}: Python {out.strip()} ({python}) is too old: the "
                       f"collector needs >= {need}")


def run_bounded(prefix: Path, argv: list[str], stdin: str, limit: float) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of argv run in its own session, so that a timeout, an
    output flood or an interrupt kills the whole process group (grandchildren included), and
    nothing it started outlives the call."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}
    try:
        proc = subprocess.Popen(
            [os.path.abspath(argv[0]), *argv[1:]],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=str(prefix),  # not the caller's directory: nothing of it on the path
            start_new_session=True,
        )
    except OSError as e:
        raise BadInput(f"--prefix {prefix}: cannot run {argv[0]}: {e.strerror or e}") from None
    try:
        out, err = _communicate(proc, stdin.encode(), limit, prefix)
    finally:
        _kill_group(proc)
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _communicate(proc: subprocess.Popen, data: bytes, limit: float, prefix: Path
                 ) -> tuple[bytes, bytes]:
    """Feed stdin and read both pipes to EOF and exit, within `limit` s and MAX_OUTPUT bytes."""
    assert proc.stdin and proc.stdout and proc.stderr  # all three are PIPEs
    deadline = time.monotonic() + limit
    bufs: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    sel = selectors.DefaultSelector()
    for f in (proc.stdout, proc.stderr):
        sel.register(f, selectors.EVENT_READ)
    if data:
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    sent, size, exited = 0, 0, None
    with sel:
        while sel.get_map():
            now = time.monotonic()
            if exited is None and proc.poll() is not None:
                exited = now
            if exited is not None and now - exited > 1.0:
                break  # a grandchild holds the pipes open: what the interpreter wrote is all
            if now >= deadline:
                raise EnvcheckError(
                    f"--prefix {prefix}: its python did not finish collecting facts in {limit:g} s"
                )
            for key, _ in sel.select(min(deadline - now, 0.2)):
                if key.fileobj is proc.stdin:
                    try:
                        sent += os.write(key.fd, data[sent:sent + 65536])
                    except BrokenPipeError:
                        sent = len(data)
                    if sent >= len(data):
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                bufs[key.fd].append(chunk)
                size += len(chunk)
                if size > MAX_OUTPUT:
                    raise EnvcheckError(f"--prefix {prefix}: its python wrote more than "
                                        f"{MAX_OUTPUT >> 20} MiB")
    proc.wait(max(deadline - time.monotonic(), 1.0))
    return b"".join(bufs[proc.stdout.fileno()]), b"".join(bufs[proc.stderr.fileno()])


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(proc.pid, signal.SIGKILL)
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            f.close()
    proc.wait()


def _failure(python: Path, stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "no message"
    return f"{python} could not collect facts: {last[:300]}"


def prefix_summary(prefix: Path, facts: NodeFacts) -> dict[str, str]:
    """What the report's environment says about a checked prefix."""
    versions = {**facts.python_packages, **facts.packages}
    return {
        "prefix": str(prefix),
        "prefix python": facts.python,
        "prefix dask": versions.get("dask") or versions.get("dask-core") or "not installed",
        "prefix distributed": versions.get("distributed") or "not installed",
    }
