"""TensorFlow's MultiWorkerMirroredStrategy across verify job's ranks (--tensorflow).

The cluster is what a training script derives from its launcher (worker i = rank i):

- under srun, where Slurm granted the tasks GPUs, ``SlurmClusterResolver()`` itself (port_base
  agreed by the ranks), as TensorFlow's docs have a script do; a rank the resolver places on
  another node than the one it runs on (it sorts the nodes by name, assumes block distribution)
  is named before the strategy would wait for a worker that is not there;
- under srun otherwise, TF_CONFIG from the step's node names (SLURM_STEP_NODELIST) and a free
  port per rank: the node names must resolve and connect from every node;
- under other launchers, TF_CONFIG from the address each rank reaches rank 0 from.

Each rank runs the strategy in a child of its interpreter and reduces ``replica_id + 1``:
every worker must see as many replicas as the ranks' devices together (one per rank on CPUs;
the GPUs each lists otherwise) and their sum R(R+1)/2. A worker that never joins makes the
others wait inside the strategy's constructor for ever, and TensorFlow ignores SIGTERM there:
the child sets the default action for SIGALRM with an alarm at its deadline, and the parent
kills it too, so every rank leaves within --timeout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Any

from envcheck.verify.facts.probes import json_objects
from envcheck.verify.job.checks import Collective
from envcheck.verify.job.launch import PORT_RANGE, LaunchInfo
from envcheck.verify.job.rank import RankFacts

STEP = "TensorFlow's MultiWorkerMirroredStrategy"

_CHILD = r"""
import json, os, signal, socket, sys
signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the one signal TensorFlow does not catch here
signal.alarm(max(1, int(float(sys.argv[1]))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

def say(rec):
    print(json.dumps(rec), flush=True)

def line(e):
    msg = (str(e).strip().splitlines() or [""])[0][:300]
    return type(e).__name__ + (": " + msg if msg else "")

try:
    import tensorflow as tf
except BaseException as e:
    say({"error": "tensorflow does not import: " + line(e)})
    sys.exit(0)
resolver, address = None, ""
if sys.argv[2] == "slurm":  # as a script under srun makes it: SlurmClusterResolver()
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(port_base=int(sys.argv[3]))
        address = resolver.cluster_spec().as_dict()["worker"][resolver.task_id]
    except BaseException as e:
        hint = ""
        if "arg 3 must not be zero" in str(e):
            hint = (" (it takes this task's CUDA_VISIBLE_DEVICES=" + repr(cvd) + " for the node's"
                    " GPUs, fewer than the node's tasks: under srun --gpus-per-task give it"
                    " gpus_per_node= and gpus_per_task=)")
        say({"error": "SlurmClusterResolver() failed: " + line(e) + hint})
        sys.exit(0)
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    if address.rsplit(":", 1)[0] != node:
        say({"error": "SlurmClusterResolver() gives this task (SLURM_PROCID "
             + os.environ.get("SLURM_PROCID", "?") + ") the worker address " + address
             + ", but it runs on " + node + ": it sorts the step's nodes by name and assumes"
             " srun's block distribution", "address": address})
        sys.exit(0)
local = len(tf.config.list_physical_devices("GPU")) or 1
strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)

def step():
    ctx = tf.distribute.get_replica_context()
    return tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32)

total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step), axis=None)
say({"replicas": int(strategy.num_replicas_in_sync), "reduce": float(total), "local": local,
     "version": tf.__version__, "address": address})
"""


def free_ports(count: int = 1) -> int:
    """The first of ``count`` consecutive ports free on every address now (SlurmClusterResolver
    gives a node's tasks port_base + their index there), from launch.PORT_RANGE and below the
    kernel's ephemeral range: a port the kernel hands out for bind(0) can be taken by another
    process's outgoing connection before TensorFlow's gRPC server binds it ("Could not start
    gRPC server"). They are checked on the wildcard address, as TensorFlow's server binds
    them: that bind fails where any address of the host holds the port, verify job's own
    rendezvous included."""
    import random

    pick = random.SystemRandom()
    low, high = PORT_RANGE
    last = min(high, _ephemeral_low()) - count  # the highest base whose block fits
    for _ in range(64):
        base = pick.randrange(low, max(last, low) + 1)
        if _all_bind(base, count):
            return base
    with socket.socket() as s:  # no block free below the range: the kernel's choice
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _all_bind(base: int, count: int) -> bool:
    held: list[socket.socket] = []
    try:
        for port in range(base, base + count):
            s = socket.socket()
            held.append(s)
            s.bind(("", port))
        return True
    except OSError:
        return False
    finally:
        for s in held:
            s.close()


def ports_needed(launch: LaunchInfo) -> int:
    """Ports a rank's block must hold: under srun a node's tasks take port_base + their index
    (the most tasks on one node), elsewhere each rank its own."""
    if launch.launcher == "slurm" and launch.tasks_per_node:
        return max(1, *launch.tasks_per_node)
    return 1


_NO_GPU = ("", "-1", "NoDevFiles", "none")  # CUDA_VISIBLE_DEVICES values that grant none


def cluster(launch: LaunchInfo, where: list[tuple[int, str, int]],
            ranks: tuple[RankFacts, ...]) -> tuple[list[str], int]:
    """(TF_CONFIG's workers, 0), or ([], port_base) for SlurmClusterResolver, from the ranks'
    (rank, ip, free port) in rank order: see the module's docstring."""
    if launch.launcher == "slurm" and ranks and all(
            (r.cuda_visible_devices or "").strip() not in _NO_GPU for r in ranks):
        return [], where[0][2]
    hosts = [launch.host_of(r) for r, _, _ in where] if launch.launcher == "slurm" else []
    if hosts and all(hosts):
        return [f"{h}:{port}" for h, (_, _, port) in zip(hosts, where)], 0
    return [f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}" for _, ip, port in where], 0


def describe(workers: list[str], slurm_port: int, launch: LaunchInfo) -> str:
    """Where the strategy's cluster came from, in the report's words."""
    if slurm_port:
        return f"SlurmClusterResolver(port_base={slurm_port})"
    source = "SLURM_STEP_NODELIST" if launch.launcher == "slurm" and launch.hosts else (
        "the ranks' addresses")
    return f"TF_CONFIG from {source}: " + ", ".join(workers[:4]) + (
        f" and {len(workers) - 4} more" if len(workers) > 4 else "")


def tf_config(workers: list[str], index: int) -> str:
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


def run_worker(workers: list[str], index: int, timeout: float,
               slurm_port: int = 0) -> dict[str, Any]:
    """This rank's worker of the strategy, in a child bounded by ``timeout``: TF_CONFIG from
    ``workers``, or (``slurm_port``) SlurmClusterResolver(port_base=slurm_port)."""
    env = dict(os.environ)
    if slurm_port:
        env.pop("TF_CONFIG", None)  # the resolver's cluster, not one left in the environment
        argv = ["slurm", str(slurm_port)]
    else:
        env["TF_CONFIG"] = tf_config(workers, index)
        argv = ["config"]
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, f"{timeout:g}", *argv], env=env,
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
    found = next(json_objects(reversed(stdout.splitlines())), None)
    if found is not None:
        return found
    if proc.returncode == -14:  # SIGALRM: the deadline, inside TensorFlow
        return {"error": f"no answer within {timeout:g} s (waiting for the other workers)"}
    tail = [x for x in stderr.strip().splitlines() if x.strip()]
    return {"error": f"the TensorFlow child exited {proc.returncode}"
            + (f": {tail[-1][:300]}" if tail else "")}


def collective(answers: list[tuple[int, dict[str, Any]]], world: int) -> Collective:
    """The ranks' answers as a Collective: a rank whose TensorFlow failed first is named as
    the cause; ranks left waiting for it come after. Every rank must see as many replicas as
    all ranks' devices together, and their known sum."""
    failed = [(r, a["error"]) for r, a in answers if a.get("error")]
    if failed:
        first = sorted(failed, key=lambda f: "no answer within" in f[1])
        return Collective("tensorflow", world * (world + 1) / 2, error="; ".join(
            f"rank {r}: {why}" for r, why in first))
    replicas = sum(int(a.get("local", 1)) for _, a in answers)
    expected = replicas * (replicas + 1) / 2
    wrong = [(r, a["replicas"]) for r, a in answers if a.get("replicas") != replicas]
    if wrong:
        return Collective("tensorflow", expected, error="; ".join(
            f"rank {r} sees {n} replica(s) where the {world} ranks' devices make {replicas}"
            for r, n in wrong))
    return Collective("tensorflow", expected,
                      tuple((r, float(a["reduce"]), float(a["reduce"])) for r, a in answers))
