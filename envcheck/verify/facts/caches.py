"""Per-process caches of what a collection reads from the file system, keyed on directories'
(mtime, inode), and of what is fixed for a process's life."""

from __future__ import annotations

import os
import threading
import time

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

# ---- per-process caches --------------------------------------------------------------------
# A worker answers many rounds in its life, and most of what a round reads from the file system
# changes only when a directory's entries change: pip and conda install, upgrade and uninstall
# add, rename or remove entries of site-packages / conda-meta, which moves the directory's
# mtime. So those scans are kept, keyed on the directories' (mtime, inode): a stat per sys.path
# entry instead of listing and parsing them.
# Live state (GPU memory and processes, the environment, NVLink and PCIe link state) is never
# kept. Every cached value is copied out, so callers may not corrupt it.

_CACHE: dict[str, tuple[Any, Any]] = {}

# A directory changed twice within one timestamp tick keeps one mtime (the "racy git"
# problem): a scan of a directory modified this recently is used once, not kept. Linux file
# systems stamp with the kernel's coarse clock (one tick, at most 10 ms); 100 ms leaves a
# margin. Not longer: Dask creates its scratch directories (on sys.path) as a cluster starts.
_RACY_NS = 100_000_000


# thread id -> {path: os.stat result or None}, during one collection by that thread. A plain
# dict, not threading.local: cloudpickle must be able to ship this module by value.
_STAT_MEMO: dict[int, dict[str, Any]] = {}


def dirs_key(dirs: list[str]) -> tuple[tuple[str, int, int], ...] | None:
    """(dir, mtime_ns, inode) for each entry; None (do not cache) when one just changed."""
    out = []
    now = time.time_ns()
    memo = _STAT_MEMO.get(threading.get_ident())
    for d in dirs:
        path = d or "."
        if memo is not None and path in memo:
            st = memo[path]
        else:
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if memo is not None:
                memo[path] = st
        if st is None:
            out.append((d, -1, -1))
            continue
        if now - st.st_mtime_ns < _RACY_NS:
            return None
        out.append((d, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _cached(name: str, key: Any, compute: Any) -> Any:
    """compute() once per key; a copy of the value every time (dicts and tuples of dicts)."""
    hit = _CACHE.get(name)
    if key is not None and hit is not None and hit[0] == key:
        value = hit[1]
    else:
        value = compute()
        if key is not None:
            _CACHE[name] = (key, value)
        else:
            _CACHE.pop(name, None)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, tuple):
        return tuple(dict(v) if isinstance(v, dict) else v for v in value)
    return value


def _process_constant(name: str, read: Any) -> Any:
    """What is fixed for the life of a process (its interpreter, its mapped libc): read once."""
    key = f"constant:{name}"
    if key not in _CACHE:
        _CACHE[key] = read()
    return _CACHE[key]
