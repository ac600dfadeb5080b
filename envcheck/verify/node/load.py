"""verify node --level 2: a short load on every visible GPU, and the health reads under it.

A child interpreter (this one) runs, through torch or else CuPy, per visible GPU: a write/read
pass over a device buffer (a pattern written on the GPU, read back and compared), then
host->device and device->host copies of pinned memory for about `seconds` (the PCIe link
under load); then the matrix multiplies of gemm.py (NodeFacts.gemm, judged by the gemm
check). Meanwhile this process reads the GPUs' health through NVML; the link as trained
under the load and the error counters after it become NodeFacts.gpu_health_after, which the
pcie and nvlink checks compare with the idle reads.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time

from envcheck.report import Measurement, Result, Status
from envcheck.verify.facts import NVML_NO_MODULE, GpuHealth, NodeFacts, collect_gpu_health
from envcheck.verify.facts.orphans import dies_with_parent
from envcheck.verify.node.checks.gpu.nvml_gap import gap_results, no_nvml_fix
from envcheck.verify.node.gemm import GEMM_CHILD, gemm_runs

CHECK = "gpu-load"
BUFFER_MIB = 256

# Run as `python -c LOAD_CHILD framework seconds`: one JSON line per device, flushed.
LOAD_CHILD = r"""
import json, sys, time
framework, seconds = sys.argv[1], float(sys.argv[2])
MIB = 256
n = MIB * 2**20 // 4

def out(**kw):
    print(json.dumps(kw), flush=True)

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
for d in range(count):
    try:
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
    except Exception as e:
        out(device=d, error=(type(e).__name__ + ": " + str(e)).splitlines()[0][:300])
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
        [python or sys.executable, "-c", dies_with_parent(LOAD_CHILD + GEMM_CHILD), framework,
         str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []  # the child's stdout, as it comes (a thread appends)
    pump = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                            daemon=True)  # type: ignore[union-attr]
    pump.start()
    samples: list[tuple[GpuHealth, ...]] = []
    during: dict[int, list[GpuHealth]] = {}  # NVML index -> reads while its GEMM ran
    deadline = time.monotonic() + seconds * 3 + 120 + 10 * len(indices)
    while proc.poll() is None and time.monotonic() < deadline:
        sample = collect_gpu_health(indices)
        samples.append(sample)
        gemm_on = _gemm_device(lines, order)
        for h in sample:
            if h.index == gemm_on:
                during.setdefault(h.index, []).append(h)
        time.sleep(0.25)
    if proc.poll() is None:
        proc.kill()
    stderr = proc.communicate()[1]
    pump.join(timeout=5)
    final = collect_gpu_health(indices)
    after = merge_under_load(samples, final)
    stdout = "".join(lines)
    results, measurements = judge_load(stdout, stderr, proc.returncode, order, framework)
    names = {g.index: g.name for g in facts.gpus}
    gemm = gemm_runs(lines, order, names, during, framework)
    return dataclasses.replace(facts, gpu_health_after=after, gemm=gemm), results, measurements


def _gemm_device(lines: list[str], order: list[int | None]) -> int | None:
    """The NVML index whose GEMM the child runs now (its last phase line), or None."""
    for line in reversed(lines[-8:]):
        if '"phase"' in line:
            try:
                msg = json.loads(line)
            except ValueError:
                return None
            d = msg.get("device")
            return order[d] if msg.get("phase") == "gemm" and d is not None and \
                d < len(order) else None
    return None


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
    stdout: str, stderr: str, returncode: int, order: list[int | None], framework: str
) -> tuple[list[Result], list[Measurement]]:
    """Results and measurements from the child's JSON lines (pure: tested without a GPU)."""
    results: list[Result] = []
    measurements: list[Measurement] = []
    devices = -1
    seen = set()
    for line in stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "devices" in msg:
            devices = int(msg["devices"])
            continue
        if "device" not in msg or "phase" in msg:  # the GEMM's lines: gemm.py reads them
            continue
        d = int(msg["device"])
        seen.add(d)
        index = order[d] if d < len(order) else None
        name = f"GPU {index}" if index is not None else f"CUDA device {d}"
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
