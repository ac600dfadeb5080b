"""TensorFlow's MultiWorkerMirroredStrategy across verify job's ranks (--tensorflow).

Every rank advertises a free port on the address it reaches the others from; TF_CONFIG is made
from those (worker i = rank i), as a launcher-derived cluster spec is in a training script. Each
rank runs the strategy in a child of its interpreter and reduces ``replica_id + 1`` over the
replicas: every worker must see one replica per rank and the sum n(n+1)/2. A worker that never
joins makes the others wait inside the strategy's constructor for ever, and TensorFlow ignores
SIGTERM there (../shared/INFRA.md): the child sets the default action for SIGALRM and an alarm
at its deadline, and the parent kills it too, so every rank leaves within --timeout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Any

from envcheck.verify.job.checks import Collective

STEP = "TensorFlow's MultiWorkerMirroredStrategy"

_CHILD = r"""
import json, os, signal, sys
signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the one signal TensorFlow does not catch here
signal.alarm(max(1, int(float(sys.argv[1]))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
try:
    import tensorflow as tf
except BaseException as e:
    msg = (str(e).strip().splitlines() or [""])[0][:300]
    print(json.dumps({"error": "tensorflow does not import: " + type(e).__name__
                      + (": " + msg if msg else "")}))
    sys.exit(0)
strategy = tf.distribute.MultiWorkerMirroredStrategy()

def step():
    ctx = tf.distribute.get_replica_context()
    return tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32)

total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step), axis=None)
print(json.dumps({"replicas": int(strategy.num_replicas_in_sync), "reduce": float(total),
                  "version": tf.__version__}), flush=True)
"""


def free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip or "0.0.0.0", 0))
        return int(s.getsockname()[1])


def tf_config(workers: list[str], index: int) -> str:
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


def run_worker(workers: list[str], index: int, timeout: float) -> dict[str, Any]:
    """This rank's worker of the strategy, in a child bounded by ``timeout``."""
    env = {**os.environ, "TF_CONFIG": tf_config(workers, index)}
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, f"{timeout:g}"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    except OSError as e:
        return {"error": f"the TensorFlow child did not start: {e}"}
    try:
        stdout, stderr = proc.communicate(timeout=timeout + 2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"no answer within {timeout:g} s (waiting for the other workers)"}
    for text in reversed(stdout.splitlines()):
        try:
            found = json.loads(text)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    if proc.returncode == -14:  # SIGALRM: the deadline, inside TensorFlow
        return {"error": f"no answer within {timeout:g} s (waiting for the other workers)"}
    tail = [x for x in stderr.strip().splitlines() if x.strip()]
    return {"error": f"the TensorFlow child exited {proc.returncode}"
            + (f": {tail[-1][:300]}" if tail else "")}


def collective(answers: list[tuple[int, dict[str, Any]]], world: int) -> Collective:
    """The ranks' answers as a Collective: a rank whose TensorFlow failed first is named as
    the cause; ranks left waiting for it come after."""
    expected = world * (world + 1) / 2
    failed = [(r, a["error"]) for r, a in answers if a.get("error")]
    if failed:
        first = sorted(failed, key=lambda f: "no answer within" in f[1])
        return Collective("tensorflow", expected, error="; ".join(
            f"rank {r}: {why}" for r, why in first))
    wrong_world = [(r, a["replicas"]) for r, a in answers if a.get("replicas") != world]
    if wrong_world:
        return Collective("tensorflow", expected, error="; ".join(
            f"rank {r} sees {n} replica(s) in a world of {world}" for r, n in wrong_world))
    return Collective("tensorflow", expected,
                      tuple((r, float(a["reduce"]), float(a["reduce"])) for r, a in answers))
