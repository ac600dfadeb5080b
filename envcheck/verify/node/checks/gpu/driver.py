"""Is there an NVIDIA driver, and is it new enough for the CUDA the environment was built for?"""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations, version_tuple
from envcheck.verify.facts import NodeFacts

from .nvml_gap import no_gpu_skip, no_nvml_fix, nvml_gap

# Minimum Linux x86_64 driver per CUDA toolkit release (the GA release of each minor version).
# Source: NVIDIA CUDA Toolkit Release Notes, Table 3 "CUDA Toolkit and Corresponding Driver
# Versions" (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html).
MIN_DRIVER: dict[tuple[int, int], str] = {
    (10, 0): "410.48",
    (10, 1): "418.39",
    (10, 2): "440.33",
    (11, 0): "450.36.06",
    (11, 1): "455.23",
    (11, 2): "460.27.03",
    (11, 3): "465.19.01",
    (11, 4): "470.42.01",
    (11, 5): "495.29.05",
    (11, 6): "510.39.01",
    (11, 7): "515.43.04",
    (11, 8): "520.61.05",
    (12, 0): "525.60.13",
    (12, 1): "530.30.02",
    (12, 2): "535.54.03",
    (12, 3): "545.23.06",
    (12, 4): "550.54.14",
    (12, 5): "555.42.02",
    (12, 6): "560.28.03",
    (12, 8): "570.26",
    (12, 9): "575.51.03",
    (13, 0): "580.65.06",
}

# CUDA minor version compatibility (same release notes, Table 2): an application built with any
# 11.x / 12.x / 13.x toolkit runs on a driver at least this new, without the features (PTX JIT
# of newer code among them) that need the driver of its own minor release.
MINOR_COMPAT_DRIVER: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}

CHECK = "driver"


def check_driver(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """NVIDIA driver present and new enough for the CUDA version the environment needs."""
    gap = nvml_gap(facts)
    if gap is not None:
        return [Result(CHECK, Status.FAIL, gap[0], fix=gap[1])]
    if facts.nvml_error and not facts.driver_version:
        if exp.cuda or exp.expects_gpus:
            need = f"the environment needs CUDA {exp.cuda}" if exp.cuda else "GPUs are expected"
            return [
                Result(
                    CHECK,
                    Status.FAIL,
                    f"no usable NVIDIA driver ({facts.nvml_error}) but {need}",
                    fix=no_nvml_fix(facts),
                )
            ]
        return [no_gpu_skip(facts, CHECK)]
    have = f"driver {facts.driver_version} (supports CUDA {facts.cuda_driver_version or '?'})"
    if not exp.cuda:
        return [Result(CHECK, Status.PASS, f"{have}; no CUDA version required")]
    return [_judge(facts, exp.cuda, have)]


def _judge(facts: NodeFacts, cuda: str, have: str) -> Result:
    need = version_tuple(cuda)[:2]
    if len(need) < 2:
        need = (need[0], 0) if need else (0, 0)
    driver = version_tuple(facts.driver_version)
    table_min = MIN_DRIVER.get(need)
    # NVML states the newest CUDA this driver supports; it is authoritative when present,
    # the table covers facts from older pynvml that lack it.
    if facts.cuda_driver_version:
        native = version_tuple(facts.cuda_driver_version)[:2] >= need
    else:
        native = table_min is not None and driver >= version_tuple(table_min)
    if native:
        return Result(CHECK, Status.PASS, f"{have} is new enough for CUDA {cuda}")
    want = f"driver >= {table_min}" if table_min else f"a driver that supports CUDA {cuda}"
    compat = MINOR_COMPAT_DRIVER.get(need[0])
    if compat and driver >= version_tuple(compat):
        return Result(
            CHECK,
            Status.WARN,
            f"{have} is older than CUDA {cuda} needs ({want}); it runs through CUDA minor "
            f"version compatibility (>= {compat} for {need[0]}.x), without PTX JIT of newer "
            "kernels",
            fix=f"upgrade to {want}, or build the environment for CUDA "
            f"{facts.cuda_driver_version or 'the driver supports'}",
        )
    return Result(
        CHECK,
        Status.FAIL,
        f"{have} is too old for CUDA {cuda}: needs {want}"
        + (f" (or >= {compat} with minor version compatibility)" if compat else ""),
        fix=f"upgrade the NVIDIA driver to {want}, or rebuild the environment for CUDA "
        f"{facts.cuda_driver_version or 'the driver supports'} (cuda-version pin in the recipe)",
    )
