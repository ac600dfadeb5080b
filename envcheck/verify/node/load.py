"""verify node --level 2: a short load on every visible GPU at once, and the health reads under it.

A child interpreter (this one) runs, through torch or else CuPy, a thread per visible GPU, all
at once, each with its GPU current (its own context and stream): a write/read pass over a
device buffer (a pattern written on the GPU, read back and compared), then host->device and
device->host copies of pinned memory for about `seconds` (the PCIe link under load); then the
matrix multiplies of gemm.py (NodeFacts.gemm, judged by the gemm check). Meanwhile this
process reads the GPUs' health through NVML (while any GPU multiplies, only the clock and
temperature of those that do: reads_due); the link as trained under the load and the error
counters after it become NodeFacts.gpu_health_after, which the pcie and nvlink checks compare
with the idle reads over the load's window (each read carries its time). A load that ran out
of memory on a GPU another process held is an ERROR naming that process (checks/gpu/held.py).
"""

from __future__ import annotations

import collections
import dataclasses
import subprocess
import sys
import threading
import time
from typing import IO, Callable

from envcheck import progress
from envcheck.report import Measurement, Result, Status
from envcheck.verify.facts import (
    NVML_NO_MODULE,
    GpuHealth,
    NodeFacts,
    collect_gpu_clocks,
    collect_gpu_health,
)
from envcheck.verify.facts.orphans import dies_with_parent
from envcheck.verify.facts.probes import json_objects
from envcheck.verify.node.checks.gpu.held import held_result, memory_held
from envcheck.verify.node.checks.gpu.nvml_gap import gap_results, no_nvml_fix
from envcheck.verify.node.gemm import GEMM_CHILD, gemm_runs

CHECK = "gpu-load"
BUFFER_MIB = 256

# Run as `python -c LOAD_CHILD+GEMM_CHILD+RUN_CHILD framework seconds`: one JSON line per
# message, whole (a lock: the devices' threads print at once), flushed.
LOAD_CHILD = r"""
import json, sys, threading, time
framework, seconds = sys.argv[1], float(sys.argv[2])
MIB = 256
n = MIB * 2**20 // 4
_lock = threading.Lock()

def out(**kw):
    line = json.dumps(kw) + "\n"
    with _lock:
        sys.stdout.write(line)
        sys.stdout.flush()

def fault(e):
    # the error line's fields; oom: the framework's out-of-memory type, or a CUDA call that
    # failed with cudaErrorMemoryAllocation (a context that cannot be created on a full GPU)
    text = (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]
    oom = type(e).__name__ == "OutOfMemoryError" or "out of memory" in str(e).lower() or \
        "cudaErrorMemoryAllocation" in str(e)
    return {"error": text, "oom": oom}

if framework == "torch":
    import torch
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
else:
    import cupy
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:
        count = 0
out(devices=count)

def load(d):
    if framework == "torch":
        dev = torch.device("cuda", d)
        buf = torch.arange(n, dtype=torch.int32, device=dev) * 7 + d
        back = buf.cpu()
        ok = bool(torch.equal(back, torch.arange(n, dtype=torch.int32) * 7 + d))
        host = torch.empty(n, dtype=torch.int32).pin_memory()
        sync = torch.cuda.synchronize
        h2d = lambda: buf.copy_(host, non_blocking=True)
        d2h = lambda: host.copy_(buf, non_blocking=True)
        def run(copy):
            sync(d); t = time.perf_counter(); k = 0
            while time.perf_counter() - t < seconds / 2:
                copy(); k += 1
                if k % 8 == 0:
                    sync(d)
            sync(d)
            return k * MIB / 1024 / (time.perf_counter() - t)
    else:
        import numpy
        cupy.cuda.Device(d).use()
        buf = cupy.arange(n, dtype=cupy.int32) * 7 + d
        ok = bool((cupy.asnumpy(buf) == numpy.arange(n, dtype=numpy.int32) * 7 + d).all())
        mem = cupy.cuda.alloc_pinned_memory(n * 4)
        host = numpy.frombuffer(mem, numpy.int32, n)
        def run(copy):
            cupy.cuda.Device(d).synchronize(); t = time.perf_counter(); k = 0
            while time.perf_counter() - t < seconds / 2:
                copy(); k += 1
            cupy.cuda.Device(d).synchronize()
            return k * MIB / 1024 / (time.perf_counter() - t)
        h2d = lambda: buf.set(host)
        d2h = lambda: buf.get(out=host)
    out(device=d, mem_ok=ok, h2d=run(h2d), d2h=run(d2h))
"""

# Appended after GEMM_CHILD: a thread per device, each with that device current (its own
# context and default stream; CUDA's current device is per thread), all started at once:
# the load, then its multiplies; a load that ran out of memory leaves its multiplies unrun.
RUN_CHILD = r"""
def one(d):
    out(phase="load", device=d)
    loaded = False
    try:
        with (torch.cuda.device(d) if framework == "torch" else cupy.cuda.Device(d)):
            try:
                load(d)
            except Exception as e:
                err = fault(e)
                out(device=d, **err)
                if err["oom"]:
                    out(gemm=d, error="not run: the load before it ran out of memory", oom=True)
                    return
            loaded = True
            out(phase="gemm", device=d)
            gemm(d)
    except Exception as e:  # the device could not be made current (its context not created)
        err = fault(e)
        if not loaded:
            out(device=d, **err)
        out(gemm=d, **err)
    finally:
        out(phase="end", device=d)

threads = [threading.Thread(target=one, args=(d,)) for d in range(count)]
for t in threads:
    t.start()
for t in threads:
    t.join()
out(phase="done")
"""


def pick_framework(facts: NodeFacts) -> str:
    """'torch', else 'cupy', else '': from the environment's own packages (the facts may come
    from another interpreter, verify node --prefix)."""
    names = set(facts.python_packages) | set(facts.packages)
    if names & {"torch", "pytorch"}:
        return "torch"
    if any(n == "cupy" or n.startswith("cupy-cuda") for n in names):
        return "cupy"
    return ""


def run_load(
    facts: NodeFacts, seconds: float = 4.0, python: str = "", framework: str | None = None
) -> tuple[NodeFacts, list[Result], list[Measurement]]:
    """Load every visible GPU from `python` (default: this interpreter); facts with
    gpu_health_after, the load's results, GB/s."""
    if not facts.gpus:
        why = facts.nvml_error or "NVML lists no GPU"
        gap = gap_results(facts, CHECK, "level 2 load")
        fix = "run --level 2 on a GPU node, or use --level 1 here"
        if facts.nvml_state == NVML_NO_MODULE:
            fix = no_nvml_fix(facts)
        skip = [Result(CHECK, Status.WARN, f"level 2 load not run: no GPU ({why})", fix=fix)]
        return facts, gap or skip, []
    if not facts.visible_gpu_uuids:
        return facts, [Result(CHECK, Status.WARN, "level 2 load not run: CUDA_VISIBLE_DEVICES "
                              "leaves this process no GPU",
                              fix="unset CUDA_VISIBLE_DEVICES or name a GPU in it")], []
    framework = pick_framework(facts) if framework is None else framework
    if not framework:
        return facts, [
            Result(CHECK, Status.WARN, "level 2 load not run: neither torch nor CuPy is "
                   "installed in this environment",
                   fix="install torch or cupy-cudaXXx to run the load, or use --level 1")
        ], []
    by_uuid = {g.uuid: g.index for g in facts.gpus}
    order = [by_uuid.get(u) for u in facts.visible_gpu_uuids]  # CUDA device d -> NVML index
    indices = [i for i in order if i is not None]
    proc = subprocess.Popen(
        [python or sys.executable, "-c", dies_with_parent(LOAD_CHILD + GEMM_CHILD + RUN_CHILD),
         framework, str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []  # the child's stdout, as it comes (a thread appends)
    errs: collections.deque[str] = collections.deque(maxlen=200)  # its stderr's last lines
    pumps = [_pump(proc.stdout, lines), _pump(proc.stderr, errs)]
    gpus = f"{len(indices)} GPU{'s' * (len(indices) != 1)}"
    with progress.step(f"level 2 load: {framework} on {gpus}") as line:
        samples, during = _watch(proc, lines, order, indices, seconds,
                                 lambda text: line.tick(f"level 2 load: {framework} on {gpus}: "
                                                        + text))
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pump in pumps:
        pump.join(timeout=5)
    stderr = "".join(errs)
    final = collect_gpu_health(indices)
    stdout = "".join(lines)
    unloaded = held_unloaded(stdout, order, facts)  # judged idle, as the load never ran there
    after = tuple(h for h in merge_under_load(samples, final) if h.index not in unloaded)
    results, measurements = judge_load(stdout, stderr, proc.returncode, order, framework,
                                       facts)
    names = {g.index: g.name for g in facts.gpus}
    gemm = gemm_runs(lines, order, names, during, framework)
    return dataclasses.replace(facts, gpu_health_after=after, gemm=gemm), results, measurements


def _pump(stream: IO[str] | None, sink: list[str] | collections.deque[str]) -> threading.Thread:
    """A started thread that appends each line of `stream` to `sink` until its end."""
    thread = threading.Thread(target=lambda: sink.extend(iter(stream.readline, "")) if stream
                              else None, daemon=True)
    thread.start()
    return thread


def _watch(
    proc: subprocess.Popen[str], lines: list[str], order: list[int | None], indices: list[int],
    seconds: float, show: Callable[[str], None] = lambda text: None,
) -> tuple[list[tuple[GpuHealth, ...]], dict[int, list[GpuHealth]]]:
    """NVML reads every 0.25 s until the child ends or its deadline passes: (full health reads,
    NVML index -> clock reads while its GEMM ran); ``show`` hears how many GPUs are in each
    phase."""
    samples: list[tuple[GpuHealth, ...]] = []
    during: dict[int, list[GpuHealth]] = {}
    deadline = time.monotonic() + seconds * 3 + 120 + 10 * len(indices)
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() < deadline:
        phases = device_phases(list(lines))
        show(phase_counts(phases, len(indices)) + f", {time.monotonic() - start:.0f} s")
        health, clocks = reads_due(phases, order, indices)
        if health:  # the copies: the PCIe link as trained under them
            samples.append(collect_gpu_health(health))
        for index in clocks:  # multiplies: their GPUs' clock and temperature only (gemm.py)
            read = collect_gpu_clocks(index)
            if read is not None:
                during.setdefault(index, []).append(read)
        time.sleep(0.25)
    return samples, during


def phase_counts(phases: dict[int, str], gpus: int) -> str:
    """How many GPUs are starting, copying, multiplying, done: "2 copying, 6 GEMM"."""
    said = {"load": "copying", "gemm": "GEMM", "end": "done"}
    counts = collections.Counter(said.get(p, p) for p in phases.values())
    if gpus > len(phases):
        counts["starting"] = gpus - len(phases)
    order = ("starting", "copying", "GEMM", "done")
    return ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=lambda k: (
        order.index(k) if k in order else len(order), k)))


def device_phases(lines: list[str]) -> dict[int, str]:
    """CUDA device -> the phase its thread in the child last announced ("load", "gemm",
    "end"); devices not yet announced are absent."""
    phases: dict[int, str] = {}
    for msg in json_objects(line for line in lines if '"phase"' in line):
        if isinstance(msg.get("device"), int):
            phases[msg["device"]] = str(msg.get("phase"))
    return phases



def reads_due(
    phases: dict[int, str], order: list[int | None], indices: list[int]
) -> tuple[list[int], list[int]]:
    """What NVML reads now, as NVML indices: (GPUs to read in full, GPUs to read only the
    clocks of). While any GPU multiplies, only the clocks of those that do (a full read, about
    80 calls, would compete with the multiplies it watches); else every loaded GPU in full."""
    gemm: set[int] = set()
    for d, phase in phases.items():
        index = order[d] if phase == "gemm" and 0 <= d < len(order) else None
        if index is not None:
            gemm.add(index)
    return ([], sorted(gemm)) if gemm else (list(indices), [])


def held_unloaded(stdout: str, order: list[int | None], facts: NodeFacts) -> set[int]:
    """NVML indices whose load ran out of memory where other processes held the GPU's memory
    before it (checks/gpu/held.py): no read of theirs is one under load."""
    held = set()
    for msg in json_objects(stdout.splitlines()):
        d = msg.get("device") if msg.get("oom") else None
        index = order[d] if isinstance(d, int) and 0 <= d < len(order) else None
        if index is not None and memory_held(facts, index):
            held.add(index)
    return held


def merge_under_load(
    samples: list[tuple[GpuHealth, ...]], final: tuple[GpuHealth, ...]
) -> tuple[GpuHealth, ...]:
    """The final reads (counters after the load), with each GPU's PCIe link the best it
    trained to during the load."""
    best: dict[int, tuple[int, int]] = {}
    for sample in samples:
        for h in sample:
            link = (h.pcie_gen or 0, h.pcie_width or 0)
            if link > best.get(h.index, (0, 0)):
                best[h.index] = link
    out = []
    for h in final:
        if h.index in best and best[h.index] > (h.pcie_gen or 0, h.pcie_width or 0):
            h = dataclasses.replace(h, pcie_gen=best[h.index][0], pcie_width=best[h.index][1])
        out.append(h)
    return tuple(out)


def judge_load(
    stdout: str, stderr: str, returncode: int, order: list[int | None], framework: str,
    facts: NodeFacts | None = None,
) -> tuple[list[Result], list[Measurement]]:
    """Results and measurements from the child's JSON lines and the facts read before the
    load (pure: tested without a GPU). An out-of-memory error on a GPU another process held
    is an ERROR naming it (checks/gpu/held.py), not the GPU's failure."""
    results: list[Result] = []
    measurements: list[Measurement] = []
    devices = -1
    seen = set()
    for msg in json_objects(stdout.splitlines()):
        if "devices" in msg:
            devices = int(msg["devices"])
            continue
        if "device" not in msg or "phase" in msg:  # the GEMM's lines: gemm.py reads them
            continue
        d = int(msg["device"])
        seen.add(d)
        index = order[d] if d < len(order) else None
        name = f"GPU {index}" if index is not None else f"CUDA device {d}"
        held = held_result(CHECK, facts, index, "the load") if msg.get("oom") and facts and \
            index is not None else None
        if held:
            results.append(held)
            continue
        if msg.get("error"):
            results.append(Result(CHECK, Status.FAIL, f"{name}: load failed: {msg['error']}",
                                  fix="run nvidia-smi -q on that GPU and dcgmi diag -r 2; a GPU "
                                  "that fails a plain copy needs a reset or service"))
            continue
        if not msg.get("mem_ok"):
            results.append(Result(CHECK, Status.FAIL, f"{name}: {BUFFER_MIB} MiB written on the "
                                  "GPU read back different", fix="drain the node: the GPU's "
                                  "memory returns wrong data; reset it and run dcgmi diag -r 3"))
        else:
            results.append(Result(CHECK, Status.PASS, f"{name}: {BUFFER_MIB} MiB write/read "
                                  f"pass; host->GPU {msg['h2d']:.1f} GB/s, GPU->host "
                                  f"{msg['d2h']:.1f} GB/s ({framework})"))
        for way in ("h2d", "d2h"):
            measurements.append(Measurement(f"{way} pinned {BUFFER_MIB} MiB ({framework})",
                                            round(float(msg[way]), 2), "GB/s", node=name))
    if devices == 0:
        return [Result(CHECK, Status.WARN, f"level 2 load not run: {framework} sees no CUDA "
                       "device (a CPU-only build, or no usable driver)",
                       fix=f"install a CUDA build of {framework} matching the driver, or use "
                       "--level 1")], []
    if returncode != 0 or devices < 0 or len(seen) < devices:
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        why = tail[-1][:300] if tail else f"exit {returncode}"
        results.append(Result(CHECK, Status.ERROR, f"the {framework} load process ended early: "
                              f"{why}", fix="run with --debug; check that the framework "
                              "imports and sees the GPUs (python -c 'import torch; "
                              "print(torch.cuda.device_count())')"))
    return results, measurements
