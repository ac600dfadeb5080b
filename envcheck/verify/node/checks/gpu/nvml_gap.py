"""A machine whose kernel driver shows GPUs that NVML cannot read: which part is missing, how
to get it. Every GPU check fails with this instead of skipping as on a machine without GPUs."""

from __future__ import annotations

from collections import Counter

from envcheck.report import Result, Status
from envcheck.verify.facts import (
    NVML_MISMATCH,
    NVML_NO_DRIVER,
    NVML_NO_GPU,
    NVML_NO_LIBRARY,
    NVML_NO_MODULE,
    NVML_READ_FAILED,
    NodeFacts,
)

# What is missing, and how to get it, per NodeFacts.nvml_state
_MISSING = {
    NVML_NO_MODULE: (
        "the pynvml module (nvidia-ml-py) is not importable in {python}",
        "pip install 'cluster-envcheck[gpu]' into this environment, or the environment's own "
        "package: pip install nvidia-ml-py (conda: conda install -c conda-forge pynvml)",
    ),
    NVML_NO_LIBRARY: (
        "pynvml imports but libnvidia-ml.so.1, the driver's NVML library, does not load",
        "install the user-space driver libraries of the same version as the kernel module "
        "{version} (libnvidia-ml.so.1: the libnvidia-compute / nvidia-driver-libs package of "
        "that version); in a container, start it with the NVIDIA Container Toolkit "
        "(--gpus all, NVIDIA_DRIVER_CAPABILITIES=compute,utility); ldconfig -p | grep "
        "libnvidia-ml shows what the loader finds",
    ),
    NVML_MISMATCH: (
        "libnvidia-ml.so is not the version of the loaded kernel module {version}",
        "the driver was upgraded without reloading its kernel module: reboot the node (or "
        "unload and reload the nvidia modules with no GPU process running)",
    ),
    NVML_NO_DRIVER: (
        "NVML says the kernel driver is not loaded, though /proc lists it",
        "check that /dev/nvidiactl and /dev/nvidia[0-9]* exist and are readable by this user "
        "(nvidia-modprobe -c 0 -u creates them; in a container pass the devices in)",
    ),
    NVML_READ_FAILED: (
        "NVML started but failed reading the GPUs",
        "run nvidia-smi -q to see which GPU does not answer; it needs a reset or a reboot",
    ),
    NVML_NO_GPU: (
        "NVML answers but lists no GPU",
        "check the /dev/nvidia[0-9]* device nodes and this process's access to them "
        "(cgroup device rules, container --gpus), and 'GPU Excluded' in /proc",
    ),
}
_OTHER = (
    "NVML did not start",
    "run nvidia-smi: it prints the driver's own reason; check permissions on /dev/nvidia*",
)


def no_nvml_fix(facts: NodeFacts) -> str:
    """The fix when NVML gives no GPU and GPUs are expected, named for what failed: the pynvml
    module, else the driver."""
    if facts.nvml_state == NVML_NO_MODULE:
        kd = facts.kernel_driver
        driver = "" if (kd.version or kd.gpus) else (
            "; no NVIDIA kernel driver is loaded here either (/proc/driver/nvidia): then run "
            "on a GPU node")
        return ("pip install nvidia-ml-py into this environment (the pynvml module; conda: "
                f"conda install -c conda-forge pynvml){driver}")
    return "install the NVIDIA driver (nvidia-smi must work) or run on a GPU node"


def nvml_gap(facts: NodeFacts) -> tuple[str, str] | None:
    """(what is wrong, fix) when the kernel driver is loaded but NVML gives no GPU; else None."""
    kd = facts.kernel_driver
    if facts.gpus or not (kd.version or kd.gpus or kd.device_nodes):
        return None
    missing, fix = _MISSING.get(facts.nvml_state, _OTHER)
    version = kd.version or "(version unreadable)"
    missing = missing.format(python=facts.python_executable or "this Python", version=version)
    fix = fix.format(version=version)
    models = Counter(g.model or "unknown model" for g in kd.gpus)
    seen = ", ".join(f"{n}x {m}" for m, n in models.items()) or "no GPU listed"
    nodes = f"{len(kd.device_nodes)} /dev/nvidiaN node(s)"
    absent = [g for g in kd.gpus if g.minor >= 0 and not any(
        node.endswith(f"/nvidia{g.minor}") for node in kd.device_nodes)]
    if absent:
        nodes += ", none for minor " + ", ".join(str(g.minor) for g in absent)
    what = (
        f"NVIDIA driver {version} is loaded with {len(kd.gpus)} GPU(s) ({seen}; {nodes}) but "
        f"{missing}: {facts.nvml_error or 'no NVML facts'}"
    )
    return what, fix


def gap_results(facts: NodeFacts, check: str, subject: str) -> list[Result]:
    """[a failure saying `subject` cannot be checked and why] on such a machine, else []."""
    gap = nvml_gap(facts)
    if gap is None:
        return []
    n = len(facts.kernel_driver.gpus)
    template = _MISSING.get(facts.nvml_state, _OTHER)[0]
    why = template.split(" in {python}")[0].format(version=facts.kernel_driver.version)
    return [
        Result(
            check,
            Status.FAIL,
            f"{subject} not checked on the {n} GPU(s) the driver lists: {why}",
            fix=gap[1],
        )
    ]


def no_gpu_skip(facts: NodeFacts, check: str) -> Result:
    """A GPU check's skip on a host where NVML lists no GPU: one message, why there is none,
    for every such check, so that the report says it once for all of them."""
    return Result(check, Status.SKIP, f"no GPU: {facts.nvml_error or 'NVML lists no GPU'}")
