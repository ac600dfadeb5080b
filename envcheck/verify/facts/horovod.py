"""Horovod's build, as `horovodrun --check-build` reports it, read in a child interpreter; and
a parser for that command's text output.

`horovodrun -cb` (horovod/runner/launch.py, check_build) imports each framework extension
(horovod.tensorflow, horovod.torch, horovod.mxnet) and asks the first one that imports for
mpi_built(), gloo_built(), nccl_built(), ddl_built(), ccl_built(). The child here does the
same with the same functions, plus what -cb does not say:

- the framework version Horovod's build recorded: horovod/metadata.json, written by its CMake
  build ({"pytorch": "2.13.0+cpu", "tensorflow": ...}), the file horovod.torch itself compares
  with torch.__version__ on import (horovod/common/util.py, check_installed_version);
- the framework version installed now, and the import error of an extension built against
  another one (an undefined symbol, or Horovod's HorovodVersionMismatchError);
- NCCL's version (nccl_built() returns NCCL_VERSION_CODE) and the GPU support built in
  (cuda_built(), rocm_built()).

Like every facts module this one imports only the standard library: the child imports Horovod
and the frameworks, never the caller. It starts early in a collection and is read at its end;
a clean answer is kept on disk as facts/archs.py keeps its own (same key, same directory).
"""

from __future__ import annotations

import os
import re

from .archs import cache_path
from .model import HorovodBuild, HorovodFramework, horovod_from_dict
from .nccl import decode_nccl_version
from .orphans import start_probe
from .probes import child_answer, json_objects

TYPE_CHECKING = False  # annotations only: subprocess is imported where a child starts
if TYPE_CHECKING:
    import subprocess

# -cb's order, which is also the order it asks extensions for the build flags
FRAMEWORKS = ("tensorflow", "torch", "mxnet")
LABELS = {"tensorflow": "TensorFlow", "torch": "PyTorch", "mxnet": "MXNet"}
CONTROLLERS = ("MPI", "Gloo")
TENSOR_OPS = ("NCCL", "DDL", "CCL", "MPI", "Gloo")

_CHILD = r"""
import glob, importlib, json, os, sys, warnings

def line(e):
    text = (type(e).__name__ + ": " + str(e)).strip().splitlines()
    return " ".join(x.strip() for x in text[:2])[:400]

def say(rec):
    print(json.dumps(rec), flush=True)

# the framework each extension needs, and its key in horovod/metadata.json
NEEDS = {"torch": ("torch", "pytorch"), "tensorflow": ("tensorflow", "tensorflow"),
         "mxnet": ("mxnet", "mxnet")}
try:
    import horovod
except BaseException as e:
    say({"horovod_error": line(e)})
    sys.exit(0)
root = os.path.dirname(os.path.abspath(horovod.__file__))
try:
    with open(os.path.join(root, "metadata.json")) as f:
        meta = json.load(f)
except (OSError, ValueError):
    meta = {}
say({"version": str(getattr(horovod, "__version__", "")), "metadata": meta})
for fw in sys.argv[1:]:
    module, key = NEEDS[fw]
    rec = {"framework": fw, "built_with": str(meta.get(key, "")) if isinstance(meta, dict) else "",
           "built": bool(glob.glob(os.path.join(root, fw, "mpi_lib*.so")))}
    if not rec["built"]:
        say(rec)
        continue
    say({"start": fw})
    try:
        rec["installed"] = str(getattr(importlib.import_module(module), "__version__", "?"))
    except BaseException as e:
        rec["error"] = module + " does not import: " + line(e)
        say(rec)
        continue
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the version-mismatch warning: judged from rec
            ext = importlib.import_module("horovod." + fw)
        rec["available"] = True
        for flag in ("mpi", "gloo", "nccl", "ddl", "ccl", "cuda", "rocm"):
            fn = getattr(ext, flag + "_built", None)
            rec[flag] = int(fn()) if fn is not None else None
    except BaseException as e:
        rec["error"] = line(e)
    say(rec)
"""


class HorovodProbe:
    """A probe under way: its child, or the answer an earlier run kept (then no child)."""

    def __init__(
        self, cache: str = "", cached: HorovodBuild | None = None,
        proc: subprocess.Popen | None = None,
    ) -> None:
        self.cache = cache  # the cache file ("" : not cached, another interpreter's probe)
        self.cached = cached
        self.proc = proc

    def finish(self, timeout: float) -> HorovodBuild:
        if self.cached is not None:
            return self.cached
        build = finish_horovod_probe(self.proc, timeout)
        # only a clean answer is kept: a failed import may be fixed by installing a package
        # whose files are not in the key (a missing dependency of torch or Horovod)
        if self.cache and build.version and not build.error and not any(
                f.error for f in build.frameworks):
            _keep(self.cache, build)
        return build


def start_horovod_probe(python: str = "") -> HorovodProbe:
    """The probe, from the cache when Horovod's and the frameworks' files are as they were
    (archs.cache_path's key: a reinstall of either changes it), else a child started now."""
    cache = "" if python else cache_path(("horovod", *FRAMEWORKS), "horovod")
    cached = _cached(cache) if cache else None
    return HorovodProbe(cache, cached, None if cached is not None else _start_child(python))


def _cached(path: str) -> HorovodBuild | None:
    import json

    try:
        with open(path) as f:
            data = json.loads(f.read(1 << 20))
        build = horovod_from_dict(data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None
    return build if build is not None and build.version else None


def _keep(path: str, build: HorovodBuild) -> None:
    import dataclasses  # only when a probe's answer is kept
    import json

    data = {**dataclasses.asdict(build), "frameworks": [
        dataclasses.asdict(f) for f in build.frameworks]}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        pass


def _start_child(python: str) -> subprocess.Popen | None:
    """The child, started; None when it cannot start (the finish names that)."""
    return start_probe(python, _CHILD, FRAMEWORKS)


def finish_horovod_probe(proc: subprocess.Popen | None, timeout: float) -> HorovodBuild:
    """The child's answer; a timeout or a crash names the extension it was importing."""
    if proc is None:
        return HorovodBuild(source="probe", error="probe did not start")
    stdout, why = child_answer(proc, timeout)
    return parse_probe_lines(stdout, why)


def parse_probe_lines(stdout: str, why: str = "") -> HorovodBuild:
    """HorovodBuild from the child's JSON lines; `why` says how a child that stopped early
    ended (it is given to the extension it was importing)."""
    head: dict = {}
    records: dict[str, dict] = {}
    current = ""
    for msg in json_objects(stdout.splitlines()):
        if "horovod_error" in msg or "version" in msg:
            head = msg
        elif msg.get("start") in FRAMEWORKS:
            current = msg["start"]
        elif msg.get("framework") in FRAMEWORKS:
            records[msg["framework"]] = msg
            current = ""
    if "horovod_error" in head:
        return HorovodBuild(source="probe", error=f"import horovod: {head['horovod_error']}")
    if not head:
        return HorovodBuild(source="probe", error=f"probe {why or 'gave no answer'}")
    if current:  # died or hung inside one extension's import
        records[current] = {"framework": current, "built": True,
                            "error": f"importing horovod.{current} {why}"}
    return _build(str(head["version"]), records)


def _build(version: str, records: dict[str, dict]) -> HorovodBuild:
    frameworks = tuple(
        HorovodFramework(
            name=fw,
            built=bool(rec.get("built")),
            available=bool(rec.get("available")),
            installed=str(rec.get("installed", "")),
            built_with=str(rec.get("built_with", "")),
            error=str(rec.get("error", ""))[:400],
        )
        for fw in FRAMEWORKS
        if (rec := records.get(fw)) is not None
    )
    # as -cb: the build flags of the first extension that imports
    flags = next((records[f.name] for f in frameworks if f.available), {})
    nccl = flags.get("nccl") or 0
    controllers = tuple(c for c in CONTROLLERS if flags.get(c.lower()))
    ops = tuple(o for o in TENSOR_OPS if flags.get(o.lower()))
    gpu = "?" if not flags else "CUDA" if flags.get("cuda") else "ROCm" if flags.get(
        "rocm") else ""
    return HorovodBuild(
        version=version, frameworks=frameworks, controllers=controllers, tensor_ops=ops,
        nccl_version=decode_nccl_version(int(nccl)) if isinstance(nccl, int) and nccl > 1 else "",
        gpu=gpu, source="probe",
    )


# ---- horovodrun -cb's text --------------------------------------------------------------------

_HEAD = re.compile(r"^\s*Horovod v(\S+?):?\s*$")
_ITEM = re.compile(r"^\s*\[([ Xx])\]\s+(\S+)\s*$")
_SECTIONS = {
    "available frameworks:": "frameworks",
    "available controllers:": "controllers",
    "available tensor operations:": "tensor_ops",
}


def parse_check_build(text: str) -> HorovodBuild:
    """`horovodrun --check-build` output as HorovodBuild (source "horovodrun -cb").

    ValueError when the text is not that output (no "Horovod vX:" line, or no section).
    The output names no framework versions, NCCL version or GPU support: those stay empty
    ("?" for the GPU support).
    """
    version, section = "", ""
    marked: dict[str, dict[str, bool]] = {k: {} for k in _SECTIONS.values()}
    for raw in text.splitlines():
        if not version:
            m = _HEAD.match(raw)
            if m:
                version = m.group(1)
            continue
        key = raw.strip().lower()
        if key in _SECTIONS:
            section = _SECTIONS[key]
            continue
        m = _ITEM.match(raw)
        if m and section:
            marked[section][m.group(2)] = m.group(1) in "Xx"
    if not version:
        raise ValueError("no 'Horovod vX.Y.Z:' line: not horovodrun --check-build output")
    if not all(marked.values()):
        missing = ", ".join(k for k, v in marked.items() if not v)
        raise ValueError(f"horovodrun --check-build output without {missing}")
    by_label = {label: fw for fw, label in LABELS.items()}
    unknown = [n for n in marked["frameworks"] if n not in by_label]
    if unknown:
        raise ValueError(f"unknown framework {unknown[0]!r} in horovodrun --check-build output")
    frameworks = tuple(
        HorovodFramework(by_label[label], built=on, available=on)
        for label, on in marked["frameworks"].items()
    )
    return HorovodBuild(
        version=version,
        frameworks=frameworks,
        controllers=tuple(c for c in CONTROLLERS if marked["controllers"].get(c)),
        tensor_ops=tuple(o for o in TENSOR_OPS if marked["tensor_ops"].get(o)),
        gpu="?",
        source="horovodrun -cb",
    )

