"""TensorFlow, where it is installed: its build against the driver and the GPUs, and a
MirroredStrategy that really spans them (facts/tfprobe.py ran it in a child)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations, version_tuple
from envcheck.verify.facts import NodeFacts
from envcheck.verify.facts.visible import visible_gpu_count
from envcheck.verify.node.checks.gpu.driver import MIN_DRIVER

CHECK = "tensorflow"
CPU_FIX = ("install TensorFlow's CUDA build (pip install 'tensorflow[and-cuda]'; the "
           "tensorflow-cpu package has no GPU support)")


def check_tensorflow(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """TensorFlow's CUDA build fits the driver, lists every visible GPU, and a MirroredStrategy
    spans them all with a known-answer cross-replica reduce (a strategy silently on one
    replica is the usual failure)."""
    tf = facts.tensorflow
    if not tf.present:
        return [Result(CHECK, Status.SKIP, "not installed: TensorFlow")]
    if not tf.version:
        return [Result(CHECK, Status.FAIL, tf.error, fix="import tensorflow in this environment "
                       "to see the full error; reinstall it from the lock")]
    what = f"TensorFlow {tf.version} ({'CUDA ' + tf.cuda if tf.cuda_build else 'CPU'} build)"
    visible = gpus_to_see(facts)
    out = _build_results(facts, what, visible)
    if tf.error:
        return out + [Result(CHECK, Status.FAIL, f"{what}: {tf.error}")]
    expected = visible or tf.logical_cpus or 1
    on = "logical CPU device" if tf.logical_cpus else "GPU" if visible else "CPU device"
    if tf.replicas != expected:
        out.append(Result(CHECK, Status.FAIL, f"{what}: MirroredStrategy has {tf.replicas} "
                          f"replica(s) where {expected} {on}(s) are visible: training would "
                          "silently use fewer devices", fix=CPU_FIX if visible else ""))
    want = tf.replicas * (tf.replicas + 1) / 2
    if tf.reduce is None or abs(tf.reduce - want) > 1e-6:
        out.append(Result(CHECK, Status.FAIL, f"{what}: the cross-replica sum over "
                          f"{tf.replicas} replica(s) gave {tf.reduce}, expected {want:g}"))
    if not out:
        out.append(Result(CHECK, Status.PASS, f"{what}: MirroredStrategy over {tf.replicas} "
                          f"{on}(s), cross-replica sum {want:g}"))
    return out


def _build_results(facts: NodeFacts, what: str, visible: int) -> list[Result]:
    """The build against the driver's CUDA and the GPUs this process should see."""
    tf, out = facts.tensorflow, []
    driver = driver_cuda(facts)
    if tf.cuda_build and tf.cuda and driver and _newer(tf.cuda, driver):
        out.append(Result(CHECK, Status.FAIL, f"{what} needs CUDA {tf.cuda}; the driver "
                          f"supports CUDA {driver} at most", fix="upgrade the NVIDIA driver, or "
                          f"install a TensorFlow built for CUDA <= {driver}"))
    if visible and not tf.cuda_build:
        out.append(Result(CHECK, Status.FAIL, f"{what} on a node with {visible} visible GPU(s): "
                          "it computes on the CPU", fix=CPU_FIX))
    elif visible and tf.gpus < visible:
        out.append(Result(CHECK, Status.FAIL, f"{what} lists {max(tf.gpus, 0)} of the "
                          f"{visible} visible GPU(s): its CUDA libraries do not load or do not "
                          "match the driver", fix="pip install 'tensorflow[and-cuda]' for the "
                          "CUDA libraries it was built with; TF_CPP_MIN_LOG_LEVEL=0 shows why"))
    return out


def gpus_to_see(facts: NodeFacts) -> int:
    """GPUs this process should see: NVML's after CUDA_VISIBLE_DEVICES, else the kernel
    driver's (/proc) as CUDA_VISIBLE_DEVICES leaves them."""
    return visible_gpu_count(facts.env.get("CUDA_VISIBLE_DEVICES"), facts.visible_gpu_uuids,
                             facts.gpus, facts.kernel_driver.gpus)


def driver_cuda(facts: NodeFacts) -> str:
    """The newest CUDA the driver supports: NVML's word, else the release notes' table for
    the kernel module's version (/proc/driver/nvidia/version)."""
    if facts.cuda_driver_version:
        return facts.cuda_driver_version
    have = version_tuple(facts.kernel_driver.version)
    if not facts.kernel_driver.version:
        return ""
    fits = [cuda for cuda, least in MIN_DRIVER.items() if have >= version_tuple(least)]
    return "{}.{}".format(*max(fits)) if fits else ""


def _newer(build: str, driver: str) -> bool:
    """The build's CUDA major.minor is above what the driver supports."""
    return version_tuple(build)[:2] > version_tuple(driver)[:2]
