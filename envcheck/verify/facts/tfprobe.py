"""TensorFlow as the environment's own interpreter sees it, read in a child: its build's CUDA
and cuDNN, the GPUs it lists, and a MirroredStrategy with a known-answer cross-replica reduce.

The classic failure is silent: a CPU build, or a CUDA build whose libraries do not load, lists
no GPU, and ``MirroredStrategy()`` then trains on one replica (the CPU) without a word. The
child builds the strategy as a training script would and reduces ``replica_id + 1`` over its
replicas. It is told (on stdin, once NVML and /proc are read) how many GPUs this process should
see: with any, it builds a plain ``MirroredStrategy()``, exactly what a script gets; on a node
without GPUs it gives TensorFlow two logical CPU devices first, so the cross-device reduce still
runs. Standard library only here; the child imports TensorFlow (about 2.5 s), so it runs only
where TensorFlow is installed, bounded by the probe timeout.
"""

from __future__ import annotations

from .model import TensorFlowFacts, tensorflow_from_dict
from .orphans import start_probe
from .probes import child_answer, json_objects

TYPE_CHECKING = False  # annotations only: subprocess is imported where a child starts
if TYPE_CHECKING:
    import subprocess

CPU_REPLICAS = 2  # logical CPU devices the child makes when TensorFlow lists no GPU

_CHILD = r"""
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

def line(e):
    text = (type(e).__name__ + ": " + str(e)).strip().splitlines()
    return " ".join(x.strip() for x in text[:2])[:400]

def say(rec):
    print(json.dumps(rec), flush=True)

try:
    import tensorflow as tf
except BaseException as e:
    say({"error": "tensorflow does not import: " + line(e)})
    sys.exit(0)
info = {}
try:
    info = dict(tf.sysconfig.get_build_info())
except BaseException:
    pass
gpus = tf.config.list_physical_devices("GPU")
head = {"version": tf.__version__, "cuda_build": bool(info.get("is_cuda_build")),
        "cuda": str(info.get("cuda_version", "") or ""),
        "cudnn": str(info.get("cudnn_version", "") or ""), "gpus": len(gpus)}
say(head)
try:
    # GPUs this process should see, from the parent's NVML and /proc facts; EOF (the parent
    # went away) reads as none
    expected = int(sys.stdin.readline().strip() or "0")
    devices = None
    if not gpus and not expected and int(sys.argv[1]) > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * int(sys.argv[1]))
        devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    strategy = tf.distribute.MirroredStrategy(devices=devices)

    def step():
        ctx = tf.distribute.get_replica_context()
        return tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32)

    total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step), axis=None)
    say({"replicas": int(strategy.num_replicas_in_sync), "reduce": float(total),
         "logical_cpus": len(devices or ())})
except BaseException as e:
    say({"strategy_error": line(e)})
"""


def start_tensorflow_probe(python: str = "") -> subprocess.Popen | None:
    """The child, started (None when it cannot start: the finish says so); it is told on
    stdin how many GPUs this process should see."""
    return start_probe(python, _CHILD, (str(CPU_REPLICAS),), told=True)


def finish_tensorflow_probe(
    proc: subprocess.Popen | None, timeout: float, gpus: int = 0
) -> TensorFlowFacts:
    """The child's answer within ``timeout``, told that this process should see ``gpus``
    GPUs; a hang or a crash is the error."""
    if proc is None:
        return TensorFlowFacts(error="the TensorFlow probe did not start")
    stdout, why = child_answer(proc, timeout, f"{max(gpus, 0)}\n")
    why = "the probe " + why
    return parse_tensorflow_lines(stdout, why)


def parse_tensorflow_lines(stdout: str, why: str = "") -> TensorFlowFacts:
    """TensorFlowFacts from the child's JSON lines; ``why`` names how a child that stopped
    before the strategy's answer ended."""
    found: dict = {}
    for msg in json_objects(stdout.splitlines()):
        found.update(msg)
    if "strategy_error" in found:
        found["error"] = "MirroredStrategy failed: " + str(found.pop("strategy_error"))
    elif "version" in found and "replicas" not in found and not found.get("error"):
        found["error"] = f"MirroredStrategy gave no answer: {why}"
    elif not found:
        found["error"] = why or "the probe said nothing"
    return tensorflow_from_dict(found)
