"""The GPU architectures torch, CuPy and xgboost builds carry, read in a child interpreter.

The child imports the frameworks (this package never does) and prints one JSON line each.
It starts early in a collection and is read at its end, so its imports overlap NVML's reads.

torch   torch._C._cuda_getArchFlags(): the build's -gencode list, "sm_XY" (SASS) and
        "compute_XY" (PTX); what torch.cuda.get_arch_list() returns, without needing a GPU.
cupy    kernels are compiled at run time by NVRTC, for the GPU found, capped at the newest
        architecture NVRTC knows (cupy/cuda/compiler.py); the archs are NVRTC's
        getSupportedArchs(). The precompiled CUB/Thrust parts of a wheel are not listed.
xgboost its build_info() names no architecture: recorded with that as the error.

Importing torch and CuPy takes seconds; what they carry is fixed by their installed files. So
the answers are kept on disk ($ENVCHECK_CACHE_DIR, else $XDG_CACHE_HOME/envcheck, else
~/.cache/envcheck), keyed by the interpreter, each package's __init__.py (path, mtime, size,
inode: a reinstall changes them) and the variables that choose CUDA libraries; a probe that
failed is not kept.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from .model import CompiledArchs
from .orphans import start_probe

TYPE_CHECKING = False  # annotations only: subprocess is imported where a child starts
if TYPE_CHECKING:
    import subprocess

FRAMEWORKS = ("torch", "cupy", "xgboost")

_ARCH_CHILD = r"""
import json, sys
for fw in sys.argv[1:]:
    rec = {"framework": fw}
    try:
        if fw == "torch":
            import torch
            rec["version"] = torch.__version__
            rec["cuda"] = torch.version.cuda or ""
            get = getattr(torch._C, "_cuda_getArchFlags", None)
            flags = get() if get is not None else None
            rec["archs"] = flags.split() if flags else []
        elif fw == "cupy":
            import cupy
            from cupy.cuda import nvrtc, runtime
            rec["version"] = cupy.__version__
            v = runtime.runtimeGetVersion()
            rec["cuda"] = "%d.%d" % (v // 1000, (v % 1000) // 10)
            rec["archs"] = ["sm_%d" % a for a in nvrtc.getSupportedArchs()]
            rec["runtime_compiled"] = True
        elif fw == "xgboost":
            import xgboost
            info = xgboost.build_info()
            rec["version"] = xgboost.__version__
            cuda = info.get("CUDA_VERSION") or []
            rec["cuda"] = ".".join(str(x) for x in cuda) if info.get("USE_CUDA") else ""
            rec["error"] = "xgboost.build_info() does not list the CUDA architectures built"
    except BaseException as e:
        rec["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]
    print(json.dumps(rec), flush=True)
"""


def wanted_frameworks(packages: dict[str, str]) -> tuple[str, ...]:
    """The frameworks among an environment's packages (normalised names)."""
    names = set(packages)
    found = []
    if names & {"torch", "pytorch"}:
        found.append("torch")
    if any(n == "cupy" or n.startswith("cupy-cuda") for n in names):
        found.append("cupy")
    if names & {"xgboost", "py-xgboost", "py-xgboost-gpu", "xgboost-cpu"}:
        found.append("xgboost")
    return tuple(found)


_KEY_VARIABLES = ("CUDA_PATH", "CUDA_HOME", "LD_LIBRARY_PATH", "CONDA_PREFIX")


def cache_path(frameworks: tuple[str, ...], kind: str = "archs") -> str:
    """The cache file for these frameworks (`kind` of answer) in this interpreter and
    environment."""
    import json

    parts: list[object] = [sys.executable, [os.environ.get(v, "") for v in _KEY_VARIABLES]]
    for name in frameworks:
        try:
            spec = importlib.util.find_spec(name)  # locates, does not import
            origin = spec.origin if spec is not None else None
            st = os.stat(origin) if origin else None
            parts.append([name, origin, st and [st.st_mtime_ns, st.st_size, st.st_ino]])
        except (ImportError, ValueError, OSError):
            parts.append([name, None])
    import hashlib  # only where a probe runs: a driver is loaded, or Horovod is installed

    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:24]
    base = os.environ.get("ENVCHECK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "envcheck",
    )
    return os.path.join(base, f"{kind}-{digest}.json")


def cached_archs(path: str, frameworks: tuple[str, ...]) -> tuple[CompiledArchs, ...] | None:
    try:
        with open(path) as f:
            text = f.read(1 << 20)
    except OSError:
        return None
    got = parse_arch_lines(text, frameworks)
    return None if any(c.error == "no answer" for c in got) else got


def keep_archs(path: str, found: tuple[CompiledArchs, ...]) -> None:
    """Write the records a child gave (not its failures) for the next run; errors ignored."""
    import json

    if any(c.error.startswith(("probe ", "ImportError", "ModuleNotFoundError")) for c in found):
        return
    lines = "".join(json.dumps({**c.__dict__, "archs": list(c.archs)}) + "\n" for c in found)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(lines)
        os.replace(tmp, path)
    except OSError:
        pass


def start_arch_probe(frameworks: tuple[str, ...], python: str = "") -> subprocess.Popen | None:
    """The child, started; None when there is nothing to probe or it cannot start."""
    return start_probe(python, _ARCH_CHILD, frameworks) if frameworks else None


def finish_arch_probe(
    proc: subprocess.Popen | None, frameworks: tuple[str, ...], timeout: float
) -> tuple[CompiledArchs, ...]:
    """Each framework's record from the child's JSON lines; a timeout or crash is named."""
    import subprocess

    if proc is None:
        return tuple(CompiledArchs(f, error="probe did not start") for f in frameworks)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        why = f"probe exited {proc.returncode}: {_last_line(stderr)}"
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, _ = proc.communicate()
        why = f"probe timed out after {timeout:g} s"
    return parse_arch_lines(stdout, frameworks, why)


def parse_arch_lines(
    stdout: str, frameworks: tuple[str, ...], missing_why: str = "no answer"
) -> tuple[CompiledArchs, ...]:
    import json

    got: dict[str, CompiledArchs] = {}
    for line in stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # a framework printed while importing
        if not isinstance(msg, dict) or msg.get("framework") not in frameworks:
            continue
        got[msg["framework"]] = CompiledArchs(
            framework=msg["framework"],
            version=str(msg.get("version", "")),
            cuda=str(msg.get("cuda", "")),
            archs=tuple(str(a) for a in msg.get("archs", ()))[:64],
            runtime_compiled=bool(msg.get("runtime_compiled", False)),
            error=str(msg.get("error", ""))[:300],
        )
    return tuple(got.get(f) or CompiledArchs(f, error=missing_why) for f in frameworks)


def _last_line(text: str) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
