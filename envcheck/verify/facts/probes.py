"""Import and shared-library probes, each in a child interpreter of the environment."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from .model import ImportProbe, LibraryProbe
from .orphans import dies_with_parent

TYPE_CHECKING = False  # annotations only: subprocess is imported where a child starts
if TYPE_CHECKING:
    import subprocess
    from typing import Iterable, Iterator


def _tail(text: str, limit: int = 300) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:limit]


# ---- probes in child processes --------------------------------------------------------------

# Run by `python -c`: imports each module named in argv, one JSON line per step, flushed, so
# the parent knows which import hung or killed the interpreter.
_IMPORT_CHILD = """
import importlib, json, sys, time, traceback
for name in sys.argv[1:]:
    print(json.dumps({"start": name}), flush=True)
    t = time.perf_counter()
    try:
        importlib.import_module(name)
        err = ""
    except BaseException as e:
        lines = traceback.format_exception_only(type(e), e)
        err = (lines[-1].strip() if lines else type(e).__name__)[:500]
    print(json.dumps({"module": name, "error": err, "s": time.perf_counter() - t}), flush=True)
"""


def probe_imports(
    modules: tuple[str, ...] | list[str], timeout: float = 60.0, python: str = ""
) -> tuple[ImportProbe, ...]:
    """Import each module in a fresh interpreter of this environment, each within `timeout` s.

    A fresh process is what a job gets: a module that imports here only because the caller
    already loaded some library would pass wrongly in-process. One child runs them all; when
    an import hangs or crashes the child, that module is reported and a new child goes on
    with the rest.
    """
    results: dict[str, ImportProbe] = {}
    todo = list(dict.fromkeys(modules))
    while todo:
        done = _import_child(todo, timeout, python or sys.executable)
        results.update({p.module: p for p in done})
        todo = [m for m in todo if m not in results]
    return tuple(results[m] for m in dict.fromkeys(modules))


def _import_child(modules: list[str], timeout: float, python: str) -> list[ImportProbe]:
    import subprocess

    try:
        proc = subprocess.Popen(
            [python, "-c", dies_with_parent(_IMPORT_CHILD), *modules],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            # its own process group, killed whole on every way out (an import may start
            # processes of its own); a terminal's Ctrl-C reaches only the caller, which ends it
            start_new_session=True,
        )
    except OSError as e:
        return [ImportProbe(m, False, 0.0, f"could not start {python}: {e}") for m in modules]
    try:
        return _read_import_child(proc, modules, timeout, python)
    finally:  # done, timed out, or interrupted (KeyboardInterrupt, SIGTERM): nothing stays
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone, or not allowed: the child itself at least
        with contextlib.suppress(OSError):
            proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)


def _read_import_child(
    proc: subprocess.Popen, modules: list[str], timeout: float, python: str
) -> list[ImportProbe]:
    import json
    import queue  # only where modules are probed

    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None  # Popen(stdout=PIPE) always sets it
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    out: list[ImportProbe] = []
    current, started = "", time.perf_counter()
    while True:
        wait = timeout if not current else max(0.0, timeout - (time.perf_counter() - started))
        try:
            line = lines.get(timeout=wait)
        except queue.Empty:
            proc.kill()
            proc.wait()
            name = current or modules[len(out)]
            out.append(ImportProbe(name, False, timeout, f"timed out after {timeout:g} s"))
            return out
        if line is None:  # the child exited
            rc = proc.wait()
            if current:
                why = f"crashed the interpreter (signal {-rc})" if rc < 0 else f"exit {rc}"
                out.append(
                    ImportProbe(current, False, time.perf_counter() - started, f"import {why}")
                )
            elif len(out) < len(modules):  # died before the first step: bad interpreter
                out.extend(
                    ImportProbe(m, False, 0.0, f"{python} exited {rc} before importing")
                    for m in modules[len(out) :]
                )
            return out
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # a module printed to stdout while importing
        if "start" in msg:
            current, started = msg["start"], time.perf_counter()
        elif "module" in msg:
            out.append(ImportProbe(msg["module"], not msg["error"], msg["s"], msg["error"]))
            current = ""


# Well-known sonames, so `--library nccl` means what people mean.
SONAMES = {
    "cuda": "libcuda.so.1",
    "nccl": "libnccl.so.2",
    "openblas": "libopenblas.so.0",
    "cudart": "libcudart.so",
    "nvidia-ml": "libnvidia-ml.so.1",
    "ucp": "libucp.so.0",
    "gomp": "libgomp.so.1",
}

_LIBRARY_CHILD = """
import ctypes, ctypes.util, json, sys
for name in sys.argv[1:]:
    try:
        ctypes.CDLL(name)
        err = ""
    except OSError as e:
        err = str(e)[:300]
        # "libfoo.so" is often only in the -dev package: ask ldconfig for the runtime soname
        stem = name[3:-3] if name.startswith("lib") and name.endswith(".so") else ""
        found = ctypes.util.find_library(stem) if stem else None
        if found:
            try:
                ctypes.CDLL(found)
                err = ""
            except OSError as e2:
                err = str(e2)[:300]
    if err and "/" not in name:
        # conda's lib/ and pip wheels' nvidia/*/lib hold libraries that frameworks load by
        # path (torch preloads its NCCL so): found there, the library is usable by them
        import glob, os
        dirs = [os.path.join(sys.prefix, "lib")] + [
            d for p in sys.path if p.endswith("site-packages")
            for d in glob.glob(os.path.join(p, "nvidia", "*", "lib"))
        ]
        for cand in (os.path.join(d, name) for d in dirs):
            if os.path.exists(cand):
                try:
                    ctypes.CDLL(cand)
                    err = ""
                    break
                except OSError as e3:
                    err = str(e3)[:300]
    print(json.dumps({"name": name, "error": err}), flush=True)
with open("/proc/self/maps") as f:
    print(json.dumps({"maps": sorted({ln.split()[-1] for ln in f if "/" in ln})}), flush=True)
"""


def probe_libraries(
    names: tuple[str, ...] | list[str], timeout: float = 60.0, python: str = ""
) -> tuple[LibraryProbe, ...]:
    """dlopen each library in a child of this interpreter (its rpath and LD_LIBRARY_PATH).

    A child keeps the libraries out of the caller; the mapped path says which copy won.
    """
    import json
    import subprocess

    wanted = list(dict.fromkeys(names))
    sonames = [
        SONAMES.get(n[3:] if n.startswith("lib") else n, n) if ".so" not in n else n
        for n in wanted
    ]
    sonames = [s if ".so" in s or "/" in s else f"lib{s}.so" for s in sonames]
    try:
        proc = subprocess.run(
            [python or sys.executable, "-c", dies_with_parent(_LIBRARY_CHILD), *sonames],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return tuple(
            LibraryProbe(n, False, "", f"probe timed out after {timeout:g} s") for n in wanted
        )
    except OSError as e:
        return tuple(LibraryProbe(n, False, "", f"probe did not start: {e}") for n in wanted)
    errors: dict[str, str] = {}
    maps: list[str] = []
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "maps" in msg:
            maps = msg["maps"]
        else:
            errors[msg["name"]] = msg["error"]
    out = []
    for name, so in zip(wanted, sonames):
        if so not in errors:
            why = f"probe exited {proc.returncode} before {so}: {_tail(proc.stderr)}"
            out.append(LibraryProbe(name, False, "", why))
        elif errors[so]:
            out.append(LibraryProbe(name, False, "", errors[so]))
        else:
            base = os.path.basename(so).split(".so")[0] + ".so"
            path = next((m for m in maps if os.path.basename(m).startswith(base)), so)
            out.append(LibraryProbe(name, True, path, ""))
    return tuple(out)


def child_answer(
    proc: subprocess.Popen, timeout: float, stdin: str | None = None
) -> tuple[str, str]:
    """A probe child's stdout within ``timeout`` (``stdin`` written to it first, for a child
    started with stdin=PIPE), and how it ended when it said too little: its exit code or signal
    with the last line of its stderr, or the timeout (it is killed)."""
    import subprocess

    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
        why = f"exited {proc.returncode}" if proc.returncode >= 0 else (
            f"crashed (signal {-proc.returncode})")
        tail = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()]
        why += f": {tail[-1][:300]}" if tail else ""
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, _ = proc.communicate()
        why = f"timed out after {timeout:g} s"
    return stdout, why


def json_objects(lines: Iterable[str]) -> Iterator[dict]:
    """A child's JSON objects, one a line; any other line (what a module printed to stdout
    while importing) is passed over."""
    import json

    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict):
            yield msg
