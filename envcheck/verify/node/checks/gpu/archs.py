"""compiled-arch: does each framework's build carry code for each GPU's architecture?

CUDA's rules (CUDA C++ Programming Guide, "Binary Compatibility" and "Application
Compatibility"; https://docs.nvidia.com/cuda/cuda-c-programming-guide/#binary-compatibility):
  - SASS (a cubin, "sm_XY") built for compute capability X.Y runs on X.Z with Z >= Y: sm_80 runs
    on an 8.6 GPU, sm_86 not on 8.0, sm_80 not on 9.0 (another major).
  - "sm_XYa" (architecture-specific features, sm_90a, sm_100a) runs only on exactly X.Y;
    "sm_XYf" (family, CUDA 12.9) on X.Z with Z >= Y.
  - PTX ("compute_XY") is compiled by the driver for any GPU of compute capability >= X.Y (an
    "a" PTX only for X.Y): it runs, after a JIT at start-up (minutes for a large build; cached
    in ~/.nv/ComputeCache).
A GPU covered by SASS passes, by PTX only warns, by neither fails.
"""

from __future__ import annotations

import re

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import CompiledArchs, Gpu, NodeFacts

from .gpus import visible_gpus
from .nvml_gap import gap_results, no_gpu_skip

CHECK = "compiled-arch"

_ARCH = re.compile(r"^(sm|compute)_(\d+)([af]?)$")

# The first CUDA release that builds for each compute capability (CUDA Toolkit release notes;
# https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/).
MIN_CUDA_FOR_CC: dict[tuple[int, int], str] = {
    (6, 0): "8.0", (6, 1): "8.0", (7, 0): "9.0", (7, 5): "10.0", (8, 0): "11.0",
    (8, 6): "11.1", (8, 9): "11.8", (9, 0): "11.8", (10, 0): "12.8", (12, 0): "12.8",
}

# PyTorch wheel indexes whose builds carry each architecture, newest first (the arch lists of
# the torch 2.7 wheels: cu128 sm_75..sm_120, cu126 sm_50..sm_90; https://pytorch.org/get-started/
# locally/ and torch.cuda.get_arch_list() of each wheel).
_TORCH_INDEX = ((7, 5, "cu128"), (5, 0, "cu126"), (3, 7, "cu118"))


def parse_arch(arch: str) -> tuple[str, tuple[int, int], str] | None:
    """"sm_86" -> ("sm", (8, 6), ""), "compute_90a" -> ("compute", (9, 0), "a"), "sm_120" ->
    ("sm", (12, 0), ""); None for anything else."""
    m = _ARCH.match(arch.strip())
    if not m or len(m.group(2)) < 2:
        return None
    digits = m.group(2)
    return m.group(1), (int(digits[:-1]), int(digits[-1])), m.group(3)


def coverage(archs: tuple[str, ...], cc: tuple[int, int]) -> tuple[str, str]:
    """("sass" | "ptx" | "", the entry that covers compute capability `cc`): the newest SASS
    that runs on it, else the newest PTX the driver can compile for it."""
    best: dict[str, tuple[tuple[int, int], str]] = {}
    for arch in archs:
        parsed = parse_arch(arch)
        if parsed is None:
            continue
        kind, built, suffix = parsed
        if suffix == "a":
            fits = built == cc
        elif kind == "sm":
            fits = built[0] == cc[0] and built[1] <= cc[1]
        else:
            fits = built <= cc
        key = "sass" if kind == "sm" else "ptx"
        if fits and (key not in best or built > best[key][0]):
            best[key] = (built, arch)
    for key in ("sass", "ptx"):
        if key in best:
            return key, best[key][1]
    return "", ""


def _cc(g: Gpu) -> str:
    return f"{g.compute_capability[0]}.{g.compute_capability[1]}"


def _torch_fix(cc: tuple[int, int]) -> str:
    index = next((name for major, minor, name in _TORCH_INDEX if cc >= (major, minor)), "cu118")
    sm = f"sm_{cc[0]}{cc[1]}"
    need = MIN_CUDA_FOR_CC.get(cc)
    cuda = f" (CUDA >= {need})" if need else ""
    return (
        f"install a torch build that carries {sm}{cuda}, e.g. pip install torch --index-url "
        f"https://download.pytorch.org/whl/{index}, with a driver that supports that CUDA; "
        "python -c 'import torch; print(torch.cuda.get_arch_list())' shows what a build carries"
    )


def _cupy_fix(cc: tuple[int, int]) -> str:
    need = MIN_CUDA_FOR_CC.get(cc)
    cuda = f"CUDA >= {need}" if need else "a newer CUDA"
    return (
        f"install the CuPy wheel for {cuda} (cupy-cuda12x or cupy-cuda13x, with the NVRTC of "
        f"that CUDA: pip install 'cupy-cuda12x[ctk]'), whose NVRTC builds sm_{cc[0]}{cc[1]}"
    )


def _judge(build: CompiledArchs, gpus: list[Gpu]) -> list[Result]:
    name = f"{build.framework} {build.version}".strip()
    if build.error:
        return [Result(CHECK, Status.SKIP, f"{name}: architectures not checked ({build.error})")]
    if not build.cuda and not build.archs:
        g = gpus[0]
        fix = _torch_fix(g.compute_capability) if build.framework == "torch" else (
            _cupy_fix(g.compute_capability))
        return [Result(CHECK, Status.FAIL, f"{name} is a CPU-only build: no CUDA code for "
                       f"the {len(gpus)} GPU(s) here", fix=fix)]
    carried = " ".join(build.archs) or "none"
    archs = build.archs
    if build.runtime_compiled:  # CuPy: what NVRTC cannot build as SASS it builds as PTX
        archs += tuple("compute_" + a[3:] for a in build.archs if a.startswith("sm_"))
    by_cc: dict[tuple[int, int], list[Gpu]] = {}
    for g in gpus:
        by_cc.setdefault(g.compute_capability, []).append(g)
    out = []
    for cc, group in sorted(by_cc.items()):
        which = ", ".join(f"GPU {g.index}" for g in group) + f" ({group[0].name}, {_cc(group[0])})"
        kind, arch = coverage(archs, cc)
        fix = _torch_fix(cc) if build.framework == "torch" else _cupy_fix(cc)
        head = f"{name} (CUDA {build.cuda})"
        if kind == "sass":
            how = "NVRTC builds" if build.runtime_compiled else "SASS"
            out.append(Result(CHECK, Status.PASS, f"{head}: {how} {arch} runs on {which}"))
        elif kind == "ptx":
            out.append(Result(CHECK, Status.WARN, f"{head} has no SASS for {which}, only PTX "
                              f"{arch}: the driver compiles it at start-up, a slow first run "
                              f"(carries {carried})", fix=fix))
        else:
            out.append(Result(CHECK, Status.FAIL, f"{head} carries no code for {which}: no "
                              f"SASS sm_{cc[0]}x <= {_cc(group[0])}, no PTX <= {_cc(group[0])} "
                              f"(carries {carried}); its kernels fail with 'no kernel image is "
                              "available for execution on the device'", fix=fix))
    return out


def check_compiled_arch(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Each framework build against each visible GPU's compute capability."""
    gpus = [g for g in visible_gpus(facts) if g.compute_capability != (0, 0)]
    if not gpus:
        gap = gap_results(facts, CHECK, "compiled architectures")
        return gap or [no_gpu_skip(facts, CHECK) if not facts.gpus
                       else Result(CHECK, Status.SKIP, "no visible GPU")]
    if not facts.compiled_archs:
        return [Result(CHECK, Status.SKIP, "no torch, CuPy or xgboost in this environment (or "
                       "facts from an envcheck that did not probe them)")]
    out: list[Result] = []
    for build in facts.compiled_archs:
        out.extend(_judge(build, gpus))
    return out
