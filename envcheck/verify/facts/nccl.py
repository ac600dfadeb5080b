"""NCCL's version: torch's when torch is loaded, else libnccl's through ctypes."""

from __future__ import annotations

import ctypes
import os
import sys

from .caches import _CACHE
from .packages import _site_dirs


def _nccl_version() -> tuple[str, str]:
    """NCCL's version: torch's when torch is already imported, else libnccl through ctypes."""
    torch = sys.modules.get("torch")
    # never import torch here (it costs seconds in every worker), nor touch one that another
    # thread is still importing (smoke/warm.py): that would wait for the whole import
    importing = getattr(getattr(torch, "__spec__", None), "_initializing", False)
    if torch is not None and not importing:
        try:
            v = torch.cuda.nccl.version()
            return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v), "torch"
        except Exception:
            pass
    if "nccl" in _CACHE:  # a library once loaded stays mapped: its version cannot change
        return _CACHE["nccl"]
    candidates = [
        os.path.join(base, "nvidia", "nccl", "lib", "libnccl.so.2") for base in _site_dirs()
    ]
    candidates.append(os.path.join(sys.prefix, "lib", "libnccl.so.2"))
    candidates.append("libnccl.so.2")  # the loader's own search (LD_LIBRARY_PATH, ldconfig)
    for cand in candidates:
        if os.sep in cand and not os.path.exists(cand):
            continue
        try:
            lib = ctypes.CDLL(cand)
            out = ctypes.c_int(0)
            if lib.ncclGetVersion(ctypes.byref(out)) != 0:
                continue
        except (OSError, AttributeError):
            continue
        _CACHE["nccl"] = (decode_nccl_version(out.value), cand)
        return _CACHE["nccl"]
    return "", ""


def decode_nccl_version(code: int) -> str:
    """ncclGetVersion's integer: major*10000+minor*100+patch since 2.9, major*1000+... before."""
    if code >= 10000:
        return f"{code // 10000}.{(code % 10000) // 100}.{code % 100}"
    return f"{code // 1000}.{(code % 1000) // 100}.{code % 100}"
