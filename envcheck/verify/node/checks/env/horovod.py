"""horovod: Horovod's build (what `horovodrun --check-build` reports) against this environment.

- Each framework extension built must import with the framework installed now. An extension
  built against another torch (or TensorFlow) fails to import with an undefined symbol, or
  with Horovod's own "Framework pytorch installed with version X but found version Y"; one
  that imports beside another version only warns in Horovod (check_installed_version) and
  can break at any call. Horovod records the version it was built with in horovod/metadata.json: a
  difference fails here, naming both, with the rebuild against the current framework.
- A build with no usable framework, or neither controller (MPI, Gloo), cannot run a job.
- On a node with GPUs: a Horovod without GPU support cannot reduce GPU tensors ("Horovod was
  not compiled with GPU support"); one without NCCL reduces them through MPI, not NCCL.
"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import HorovodBuild, HorovodFramework, NodeFacts

from ..gpu.gpus import visible_gpus

CHECK = "horovod"

LABELS = {"tensorflow": "TensorFlow", "torch": "PyTorch", "mxnet": "MXNet"}
# the variable that makes Horovod's build include (and require) each framework's extension
WITH = {"tensorflow": "HOROVOD_WITH_TENSORFLOW", "torch": "HOROVOD_WITH_PYTORCH",
        "mxnet": "HOROVOD_WITH_MXNET"}


def summary(b: HorovodBuild) -> str:
    """'Horovod 0.28.1: PyTorch; controllers Gloo; tensor operations Gloo' (-cb's [X] lines)."""
    frameworks = ", ".join(LABELS[f.name] for f in b.frameworks if f.available) or "none"
    return (f"Horovod {b.version}: frameworks {frameworks}; controllers "
            f"{', '.join(b.controllers) or 'none'}; tensor operations "
            f"{', '.join(b.tensor_ops) or 'none'}")


def rebuild(b: HorovodBuild, gpu_ops: bool = False) -> str:
    """The pip command that rebuilds this Horovod against what is installed now."""
    flags = [f"{WITH[f.name]}=1" for f in b.frameworks if f.built and f.installed]
    flags += [f"HOROVOD_WITH_{c.upper()}=1" for c in b.controllers]
    if gpu_ops or "NCCL" in b.tensor_ops:  # a rebuild must not lose what the build had
        flags.append("HOROVOD_GPU_OPERATIONS=NCCL")
    pin = f"horovod=={b.version}" if b.version else "horovod"
    return (f"{' '.join(flags)} pip install --no-cache-dir --force-reinstall --no-deps "
            f"--no-build-isolation {pin}").strip()


def _framework(b: HorovodBuild, f: HorovodFramework) -> Result | None:
    """FAIL/WARN for one built extension, or None when it is fine."""
    ext = f"horovod.{f.name}"
    with_ = f"built against {f.name} {f.built_with}" if f.built_with else "built"
    if f.available and not f.installed:  # facts from -cb's text: no versions to compare
        return None
    if not f.installed:
        # built for a framework this environment does not have: only that API is unusable
        return Result(CHECK, Status.WARN, f"Horovod {b.version}'s {ext} was {with_}, but "
                      f"{f.error or f.name + ' is not installed'}",
                      fix=f"install {f.name} {f.built_with}".strip()
                      + f", or rebuild Horovod without it: {rebuild(b)}")
    fix = (f"rebuild Horovod against the installed {f.name} {f.installed}: {rebuild(b)} "
           "(or install the version it was built against)")
    if f.built_with and f.built_with != f.installed:
        what = "does not import: " + f.error if f.error else (
            "imports, and Horovod only warns (\"This can result in unexpected behavior "
            "including runtime errors\"): the C++ extension calls into a torch it was not "
            "compiled for")
        return Result(CHECK, Status.FAIL, f"Horovod {b.version}'s {ext} was built against "
                      f"{f.name} {f.built_with}, but {f.name} {f.installed} is installed: "
                      f"{ext} {what}", fix=fix)
    if f.error:
        return Result(CHECK, Status.FAIL, f"{ext} ({with_}) does not import beside {f.name} "
                      f"{f.installed}: {f.error}", fix=fix)
    return None


def _gpus(b: HorovodBuild, facts: NodeFacts) -> list[Result]:
    gpus = visible_gpus(facts)
    if not gpus or not any(f.available for f in b.frameworks):
        return []
    n = f"the {len(gpus)} GPU(s) here"
    if "NCCL" in b.tensor_ops:
        nccl = f" {b.nccl_version}" if b.nccl_version else ""
        return [Result(CHECK, Status.PASS, f"Horovod {b.version} reduces GPU tensors with "
                       f"NCCL{nccl} on {n}")]
    fix = ("rebuild Horovod with NCCL (CUDA and NCCL headers present; HOROVOD_NCCL_HOME when "
           f"NCCL is not under CUDA's tree): {rebuild(b, gpu_ops=True)}")
    if b.gpu == "":
        return [Result(CHECK, Status.FAIL, f"Horovod {b.version} is a CPU-only build (no CUDA "
                       f"or ROCm, no NCCL): it cannot reduce GPU tensors on {n} ('Horovod was "
                       "not compiled with GPU support')", fix=fix)]
    return [Result(CHECK, Status.WARN, f"Horovod {b.version} has no NCCL tensor operations: "
                   f"GPU tensors on {n} are reduced through "
                   f"{' / '.join(o for o in b.tensor_ops if o != 'NCCL') or 'nothing'} "
                   "(copies through host memory unless the MPI is CUDA-aware)", fix=fix)]


def check_horovod(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Horovod's build (horovodrun -cb): its framework extensions import beside the installed
    torch / TensorFlow (the versions it was built with), a controller, NCCL on GPU nodes."""
    b = facts.horovod
    if not b.present:
        return [Result(CHECK, Status.SKIP, "not installed: Horovod (or facts from an envcheck "
                       "that did not probe it)")]
    if b.error:
        return [Result(CHECK, Status.FAIL, f"Horovod's build could not be read: {b.error}",
                       fix=f"run `horovodrun --check-build` to see why; reinstall: {rebuild(b)}")]
    out = [r for f in b.frameworks if f.built and (r := _framework(b, f)) is not None]
    if not any(f.available for f in b.frameworks) and not out:
        out.append(Result(CHECK, Status.FAIL, f"Horovod {b.version} has no framework extension "
                          "that imports (horovodrun -cb lists no framework): a job cannot use "
                          "it", fix="install the framework, then " + rebuild(b)))
    elif not b.controllers:
        out.append(Result(CHECK, Status.FAIL, f"{summary(b)}: neither MPI nor Gloo is built, "
                          "so no job can start", fix="HOROVOD_WITH_GLOO=1 " + rebuild(b)))
    out += _gpus(b, facts)
    if not any(r.status in (Status.FAIL, Status.WARN) for r in out):
        usable = [f for f in b.frameworks if f.available]
        versions = ", ".join(f"{f.name} {f.installed}" for f in usable)
        how = "built against the installed" if all(f.built_with for f in usable) else (
            "imports beside")
        out.insert(0, Result(CHECK, Status.PASS, f"{summary(b)} ({how} {versions})"))
    return out
