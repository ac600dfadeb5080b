"""A whole GPU host through envcheck, healthy and then with each fault of issue 30 injected.

On a real multi-GPU host (the device machine's nvidia-h100-x4 / nvidia-h200-x4), with Dask on
PYTHONPATH: the healthy host through `verify node --level 2 --expect-gpus N`, `verify
cluster` (embedded) and `verify job` (torchrun, N ranks), each expected to give no FAIL; then
each fault, expected to FAIL naming the GPU, rank or worker and the cause; then `verify
cluster` timed against a bare process that does what it must (LocalCUDACluster,
get_versions(check=True), a task, a dask.array sum), alternating. Prints one table (fault,
expected, got, caught) and writes it, and every report, under OUTDIR.

Never changes the GPUs' settings: the faults are made in the environment of the processes
(PYTHONPATH shims, CUDA_VISIBLE_DEVICES, a process holding memory), nothing else.

    python3 bench/gpu_faults.py OUTDIR [--only NAME,...] [--timing-repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1", "PYTHONUNBUFFERED": "1"}


@dataclass
class Row:
    name: str
    expected: str
    got: str = ""
    caught: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    path = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH", "")) if p)
    out = {**base, **SAFE_ENV, "PYTHONPATH": path}
    for k, v in extra.items():
        if k == "PYTHONPATH_PREFIX":
            out["PYTHONPATH"] = v + os.pathsep + out["PYTHONPATH"]
        else:
            out[k] = v
    return out


def run(argv: list[str], out: Path, name: str, e: dict[str, str] | None = None,
        limit: float = 240) -> tuple[int, dict, float]:
    """(exit code, the --json report or {}, seconds); the output goes to OUTDIR/NAME.txt."""
    report = out / f"{name}.json"
    t0 = time.perf_counter()
    try:
        p = subprocess.run([*argv, "--json", str(report)], capture_output=True, text=True,
                           env=e or env(), timeout=limit, cwd=out)
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as x:
        rc, text = 124, f"timed out after {limit} s\n{x.stdout or ''}{x.stderr or ''}"
    took = time.perf_counter() - t0
    (out / f"{name}.txt").write_text(text if isinstance(text, str) else str(text))
    got = json.loads(report.read_text()) if report.exists() else {}
    return rc, got, took


def envcheck(*args: str) -> list[str]:
    return [PY, "-m", "envcheck", *args]


def torchrun(n: int, *args: str) -> list[str]:
    return [PY, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
            "-m", "envcheck", "verify", "job", "--timeout", "120", *args]


def bad(report: dict) -> list[dict]:
    return [r for r in report.get("results", []) if r["status"] in ("fail", "error")]


def healthy(row: Row, rc: int, report: dict, took: float) -> Row:
    fails = bad(report)
    row.seconds = took
    row.got = f"exit {rc}, {report.get('status', 'no report')}" + (
        f": {fails[0]['check']}: {fails[0]['message'][:160]}" if fails else "")
    row.caught = bool(report) and not fails
    return row


def fault(row: Row, rc: int, report: dict, took: float, codes: tuple[int, ...],
          words: tuple[str, ...]) -> Row:
    """Caught: the exit is one of `codes` and one failing result holds every word."""
    fails = bad(report)
    hit = [r for r in fails if all(w in f"{r['check']}: {r['message']}" for w in words)]
    first = (hit or fails or [{}])[0]
    row.seconds = took
    if report.get("exit_code", rc) != rc:  # torchrun exits 1 for any failed rank
        row.notes.append(f"the launcher exited {rc}")
        rc = report["exit_code"]
    row.got = f"exit {rc}" + (f", {first['status']} {first['check']}: {first['message'][:200]}"
                              if first else ", nothing failed")
    row.caught = rc in codes and bool(hit)
    return row


def shim(out: Path, name: str, files: dict[str, str]) -> str:
    d = out / "shims" / name
    for rel, text in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(textwrap.dedent(text))
    return str(d)


NO_PYNVML = {"pynvml.py": "raise ImportError('pynvml hidden for this run (gpu_faults.py)')\n"}
# libnvidia-ml.so and the kernel module of different versions: what nvmlInit says then
MISMATCH = {"sitecustomize.py": """
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pynvml as _p

        def _mismatch(*args, **kwargs):
            raise _p.NVMLError(_p.NVML_ERROR_LIB_RM_VERSION_MISMATCH)

        _p.nvmlInit = _p.nvmlInitWithFlags = _mismatch
    except Exception:
        pass
    """}
OLD_NUMPY = {"numpy-1.26.4.dist-info/METADATA": "Metadata-Version: 2.1\nName: numpy\n"
                                                "Version: 1.26.4\n",
             "numpy-1.26.4.dist-info/RECORD": ""}
HOLDER = """
import sys, time, torch
d, leave = int(sys.argv[1]), int(sys.argv[2]) * 2**30
torch.cuda.set_device(d)
free, _ = torch.cuda.mem_get_info(d)
held = torch.empty(max(free - leave, 2**30), dtype=torch.uint8, device=d)
a = torch.randn(4096, 4096, device=d)
print("ready", held.numel() // 2**20, flush=True)
while True:
    for _ in range(50):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize(d)
    time.sleep(0.01)
"""


def gpu_count() -> int:
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))


def healthy_rows(out: Path, n: int) -> list[Row]:
    rows = []
    rc, rep, t = run(envcheck("verify", "node", "--level", "2", "--expect-gpus", str(n)), out,
                     "healthy_node_level2", limit=300)
    rows.append(healthy(Row("healthy: verify node --level 2", "no FAIL"), rc, rep, t))
    rc, rep, t = run(envcheck("verify", "cluster"), out, "healthy_cluster", limit=300)
    rows.append(healthy(Row("healthy: verify cluster (embedded)", "no FAIL"), rc, rep, t))
    rc, rep, t = run(torchrun(n), out, "healthy_job", limit=300)
    rows.append(healthy(Row(f"healthy: verify job (torchrun, {n} ranks)", "no FAIL"), rc, rep,
                        t))
    return rows


def nvml_rows(out: Path, n: int) -> list[Row]:
    rows = []
    e = env(PYTHONPATH_PREFIX=shim(out, "nopynvml", NO_PYNVML))
    rc, rep, t = run(envcheck("verify", "node", "--expect-gpus", str(n)), out, "f_nopynvml", e)
    rows.append(fault(Row("pynvml not importable", "fail naming pynvml"), rc, rep, t, (2,),
                      ("pynvml",)))
    e = env(PYTHONPATH_PREFIX=shim(out, "mismatch", MISMATCH))
    rc, rep, t = run(envcheck("verify", "node", "--expect-gpus", str(n)), out, "f_mismatch", e)
    rows.append(fault(Row("NVML init fails (driver/library mismatch): verify node",
                          "fail naming the mismatch"), rc, rep, t, (2,), ("NVML", "version")))
    rc, rep, t = run(envcheck("verify", "cluster", "--expect-gpus", str(n)), out,
                     "f_mismatch_cluster", e, limit=300)
    rows.append(fault(Row("NVML init fails: verify cluster (embedded)",
                          "exit 2 with the node's checks (not 7)"), rc, rep, t, (2,), ("NVML",)))
    return rows


def visibility_rows(out: Path, n: int) -> list[Row]:
    rows = []
    shown = ",".join(str(i) for i in range(n - 1))
    rc, rep, t = run(envcheck("verify", "node", "--expect-gpus", str(n)), out, "f_hidden",
                     env(CUDA_VISIBLE_DEVICES=shown))
    rows.append(fault(Row(f"a GPU hidden (CUDA_VISIBLE_DEVICES={shown}) vs --expect-gpus {n}",
                          f"fail: a job sees {n - 1}"), rc, rep, t, (2,),
                      (f"a job sees {n - 1}", f"hides 1 of {n}")))
    rc, rep, t = run(envcheck("verify", "node", "--expect-ucx"), out, "f_ucx")
    rows.append(fault(Row("UCX expected (--expect-ucx) but absent", "fail naming UCX"), rc, rep,
                      t, (2,), ("ucx",)))
    return rows


def holder_rows(out: Path, n: int) -> list[Row]:
    """A foreign process holding memory and compute on the last GPU: busy-gpus, then what it
    leaves against --min-gpu-memory."""
    target = n - 1
    holder = subprocess.Popen([PY, "-c", HOLDER, str(target), "16"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env())
    rows = []
    try:
        line = holder.stdout.readline().strip() if holder.stdout else ""
        if not line.startswith("ready"):
            row = Row("a foreign process on one GPU", "fail naming GPU and pid")
            why = holder.stderr.read()[-300:] if holder.stderr else ""
            row.got = f"holder did not start: {why}"
            return [row]
        time.sleep(3)  # NVML lists the process shortly after its allocation
        rc, rep, t = run(envcheck("verify", "node", "--expect-gpus", str(n)), out, "f_busy")
        rows.append(fault(Row(f"a foreign process (memory + compute) on GPU {target}",
                              f"fail naming GPU {target} and pid {holder.pid}"), rc, rep, t,
                          (2,), (f"GPU {target} ", f"pid {holder.pid}")))
        rc, rep, t = run(envcheck("verify", "node", "--allow-busy-gpus", "--min-gpu-memory",
                                  "40GiB"), out, "f_min_memory")
        rows.append(fault(Row(f"free memory on GPU {target} below --min-gpu-memory 40GiB",
                              f"fail naming GPU {target}, the pid and what is left"), rc, rep,
                          t, (2,), (f"GPU {target} ", f"pid {holder.pid}", "left")))
    finally:
        holder.kill()
        holder.wait()
    return rows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_rows(out: Path, n: int) -> list[Row]:
    rows = []
    rc, rep, t = run(torchrun(2), out, "f_two_ranks_one_gpu", env(CUDA_VISIBLE_DEVICES="0"))
    rows.append(fault(Row("two ranks on one GPU (torchrun 2, CUDA_VISIBLE_DEVICES=0)",
                          "fail job.gpu-shared naming both ranks"), rc, rep, t, (2,),
                      ("job.gpu-shared", "rank")))
    # ranks started by hand (as pdsh or ssh loops do); the last one's environment carries
    # another numpy's metadata ahead of the real one
    odd = shim(out, "oldnumpy", OLD_NUMPY)
    port = free_port()
    procs = []
    for r in range(n):
        e = env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(n),
                LOCAL_WORLD_SIZE=str(n), RANK=str(r), LOCAL_RANK=str(r),
                **({"PYTHONPATH_PREFIX": odd} if r == n - 1 else {}))
        argv = envcheck("verify", "job", "--timeout", "120", "--json",
                        str(out / f"f_numpy{r}.json"))
        procs.append(subprocess.Popen(argv, env=e, cwd=out, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    t0 = time.perf_counter()
    codes = [p.wait(timeout=300) for p in procs]
    took = time.perf_counter() - t0
    (out / "f_numpy.txt").write_text("\n".join(p.stdout.read() if p.stdout else "" for p in procs))
    rep = json.loads((out / "f_numpy0.json").read_text()) if (out / "f_numpy0.json").exists() \
        else {}
    row = fault(Row(f"rank {n - 1} with another numpy (1.26.4 metadata first on its path)",
                    f"fail job.skew.numpy naming rank {n - 1}"), codes[0], rep, took, (2,),
                ("job.skew.numpy", f"rank {n - 1} has 1.26.4"))
    row.notes.append(f"exit codes per rank: {codes}")
    rows.append(row)
    return rows


def _start_cluster(out: Path, visible: list[str]) -> tuple[Path, list[subprocess.Popen]]:
    """A dask scheduler and one `dask worker` per entry of `visible` (its
    CUDA_VISIBLE_DEVICES), one thread each, from this interpreter."""
    sched = out / "scheduler.json"
    sched.unlink(missing_ok=True)
    procs = [subprocess.Popen([PY, "-m", "distributed.cli.dask_scheduler", "--scheduler-file",
                               str(sched), "--port", "0", "--dashboard-address", ":0"],
                              env=env(), cwd=out, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    deadline = time.monotonic() + 60
    while not sched.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    for v in visible:
        procs.append(subprocess.Popen(
            [PY, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(sched),
             "--nthreads", "1", "--no-dashboard"],
            env=env(CUDA_VISIBLE_DEVICES=v), cwd=out, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
    return sched, procs


def wrong_gpu_rows(out: Path, n: int) -> list[Row]:
    """Workers pinned 0, 1, ..., n-2 and the last one to GPU n-2 again (a worker bound to the
    wrong GPU: two compute on one, one GPU idle)."""
    visible = [str(i) for i in range(n - 1)] + [str(n - 2)]
    sched, procs = _start_cluster(out, visible)
    try:
        from distributed import Client

        with Client(scheduler_file=str(sched), timeout=60) as c:
            c.wait_for_workers(len(visible), timeout=120)
        rc, rep, t = run(envcheck("verify", "cluster", "--scheduler-file", str(sched), "--smoke",
                                  "none"), out, "f_wrong_gpu", limit=240)
        return [fault(Row(f"a worker bound to the wrong GPU (CUDA_VISIBLE_DEVICES "
                          f"{','.join(visible)})", f"fail: two workers compute on GPU {n - 2}"),
                      rc, rep, t, (2,), ("all compute on",))]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


BARE_CLUSTER = """
import dask.array as da
from dask_cuda import LocalCUDACluster
from distributed import Client
with LocalCUDACluster(dashboard_address=None) as cluster, Client(cluster) as client:
    client.get_versions(check=True)
    assert client.submit(sum, range(1000)).result() == 499500
    assert int(da.arange(1_000_000, chunks=100_000).sum().compute()) == 499999500000
"""


def timing_rows(out: Path, repeats: int, baseline: str = "") -> list[Row]:
    """verify cluster (embedded, every smoke test) and --smoke none against the bare process,
    alternating, after one untimed run; medians and the ratio (target: at most 1.5x).
    ``baseline``: another envcheck tree (its parent directory, first on PYTHONPATH) timed
    beside, as "verify cluster (baseline)". Each run's results with their seconds go to
    t_K_I.times.txt."""
    sides = {"verify cluster": (envcheck("verify", "cluster"), env()),
             "--smoke none": (envcheck("verify", "cluster", "--smoke", "none"), env())}
    if baseline:
        sides["verify cluster (baseline)"] = (envcheck("verify", "cluster"),
                                              env(PYTHONPATH_PREFIX=baseline))
    times: dict[str, list[float]] = {name: [] for name in (*sides, "bare")}
    # untimed: the first run on a host fills envcheck's cache of the frameworks' GPU
    # architectures (facts/archs.py: a child imports torch and CuPy, seconds) and the page
    # cache, which would count against whichever side ran first
    run(envcheck("verify", "cluster"), out, "t_warmup", limit=300)
    for i in range(repeats):
        for k, (name, (argv, e)) in enumerate(sides.items()):
            tag = f"t_{k}_{i}"
            _, rep, t = run(argv, out, tag, e=e, limit=300)
            times[name].append(t)
            lines = [f"{name}: {t:.2f} s"] + [
                f"{r.get('seconds') or 0:7.2f} {r['check']} {r.get('node') or ''} "
                f"{r['message'][:200]}" for r in rep.get("results", [])]
            lines += [f"measurement {m['name']} {m['value']}" for m in rep.get("measurements", [])]
            (out / f"{tag}.times.txt").write_text("\n".join(lines) + "\n")
        t0 = time.perf_counter()
        subprocess.run([PY, "-c", BARE_CLUSTER], env=env(), cwd=out, timeout=300,
                       capture_output=True)
        times["bare"].append(time.perf_counter() - t0)
    bare = statistics.median(times["bare"])
    rows = []
    for name in sides:
        med = statistics.median(times[name])
        row = Row(f"timing: {name} vs bare process", "<= 1.5x bare")
        row.got = (f"{med:.1f} s vs {bare:.1f} s = {med / bare:.2f}x (runs "
                   f"{', '.join(f'{t:.1f}' for t in times[name])}; bare "
                   f"{', '.join(f'{t:.1f}' for t in times['bare'])})")
        row.caught = med <= 1.5 * bare
        rows.append(row)
    return rows


GROUPS = {"healthy": healthy_rows, "nvml": nvml_rows, "visibility": visibility_rows,
          "holder": holder_rows, "job": job_rows, "wrong_gpu": wrong_gpu_rows}


def table(rows: list[Row]) -> str:
    lines = ["| fault | expected | got | caught / held | s |", "|---|---|---|---|---|"]
    for r in rows:
        got = (r.got + ("; " + "; ".join(r.notes) if r.notes else "")).replace("|", "/")
        lines.append(f"| {r.name} | {r.expected} | {got} | {'yes' if r.caught else 'NO'} | "
                     f"{r.seconds:.1f} |")
    faults = [r for r in rows if not r.name.startswith(("healthy", "timing"))]
    healthy_ok = [r for r in rows if r.name.startswith("healthy")]
    lines.append("")
    lines.append(f"{sum(r.caught for r in faults)} of {len(faults)} faults caught; "
                 f"{sum(not r.caught for r in healthy_ok)} false FAILs on the healthy host "
                 f"({len(healthy_ok)} runs)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--only", default=",".join([*GROUPS, "timing"]))
    ap.add_argument("--timing-repeats", type=int, default=3)
    ap.add_argument("--baseline", default="", help="an envcheck tree timed beside (timing)")
    args = ap.parse_args()
    out = args.outdir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    n = gpu_count()
    print(f"{n} GPUs; {PY}", flush=True)
    rows: list[Row] = []
    for name in args.only.split(","):
        t0 = time.perf_counter()
        try:
            got = (timing_rows(out, args.timing_repeats, args.baseline) if name == "timing"
                   else GROUPS[name](out, n))
        except Exception as e:  # one group's breakage is a row, the matrix goes on
            got = [Row(f"{name} (group)", "ran", got=f"raised {type(e).__name__}: {e}")]
        rows += got
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        for r in got:
            print(f"  {'yes' if r.caught else 'NO '} {r.name}: {r.got}", flush=True)
    text = table(rows)
    (out / "faults.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
