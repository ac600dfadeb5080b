"""How envcheck's cost grows with the cluster: whole processes against a bare baseline.

- cluster: `envcheck verify cluster ADDR --smoke submit,array` against a bare client process
  doing the same work: get_versions(check=True), one pinned task on every worker, a
  dask.array sum (smoke.array's: 4 chunks on 2 workers). Each run is the
  first on a freshly started cluster (a `dask scheduler` and `dask worker --nworkers N
  --nthreads 1`), the two in turn (A B, B A).
- job: `torchrun --standalone --nproc-per-node N -m envcheck verify job` against a bare
  torchrun script (init_process_group gloo, all_reduce, all_gather_object), in turn.

envcheck runs as a user's does: `pip install`ed (not editable) from this tree into a venv the
bench makes, whose other packages are this interpreter's (a .pth file); the cluster, the
baselines and the ranks run from that venv too. --tree runs this tree as `python -m envcheck`
instead, without the install.
- judge: verify cluster's judging layer (pipeline.judge, its tables and the text report)
  alone on NodeFacts made here for --judge-workers workers on --judge-hosts hosts, and verify
  job's (run_job_checks) for --judge-ranks ranks: seconds and tracemalloc's peak.

Prints each size's medians, the paired ratio and the slope per worker (least squares over the
sizes), in wall seconds and in CPU seconds (the command's, its children's and, for a cluster,
what the cluster's processes spent meanwhile: on a loaded machine the wall clock also counts
other processes' turns; the cluster's idle upkeep, heartbeats, counts in both). Run small on
a loaded machine (the load average is printed beside the numbers):

    python bench/scale.py --workers 8,16 --ranks 4,8 --pairs 2
    python bench/scale.py            # 8,32,64 workers; 4,16,32 ranks; 1,000 in the judge
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pairs import load_average, quartiles  # noqa: E402
from bench.scale_judge import judge_cluster, judge_job  # noqa: E402

BARE_CLIENT = """
import sys, warnings; warnings.simplefilter("ignore")
from distributed import Client, wait
import dask.array as da
c = Client(sys.argv[1])
c.get_versions(check=True)
workers = sorted(c.scheduler_info(n_workers=-1)["workers"])
futs = [c.submit(lambda n: sum(range(n)), 1000 + i, workers=[w], allow_other_workers=False,
                 pure=False) for i, w in enumerate(workers)]
assert [f.result() for f in futs] == [(1000 + i) * (999 + i) // 2 for i in range(len(workers))]
n = 1_000_000
# smoke.array's sum: 4 chunks on 2 workers
total = c.compute(da.arange(n, chunks=n // 4).sum(), workers=workers[:2]).result()
assert int(total) == n * (n - 1) // 2
c.close()
"""

BARE_JOB = """
import datetime, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
out = [None] * dist.get_world_size()
dist.all_gather_object(out, {"rank": dist.get_rank()})
assert [o["rank"] for o in out] == list(range(dist.get_world_size()))
dist.destroy_process_group()
"""


# The interpreter the cluster, the baselines and envcheck run: this one, or the bench's venv.
PYTHON = [sys.executable]
TREE = [True]  # whether envcheck runs as this tree (PYTHONPATH), not from the venv's install


def _env(with_tree: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if with_tree and TREE[0]:
        env["PYTHONPATH"] = str(ROOT)
    return {**env, "PYTHONUNBUFFERED": "1", "PYTHONWARNINGS": "ignore"}


@contextlib.contextmanager
def installed_venv() -> Iterator[str]:
    """A venv with envcheck `pip install`ed from this tree (not editable, bytecode compiled,
    as a user's), its other packages this interpreter's: its python."""
    import site
    import venv

    with tempfile.TemporaryDirectory(prefix="envcheck-scale-venv-") as tmp:
        venv.create(tmp, with_pip=False)
        python = str(Path(tmp, "bin", "python"))
        ours = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        # the packages of this interpreter's environment, after the venv's own (.pth files
        # there, such as an editable envcheck's finder, are not read)
        Path(ours, "_scale_base.pth").write_text(site.getsitepackages()[0] + "\n")
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-build-isolation", str(ROOT)], check=True, cwd=tmp,
                       env=_env(with_tree=False), stdout=subprocess.DEVNULL)
        yield python


def wall(cmd: list[str], env: dict[str, str], cwd: str, timeout: float,
         cluster: tuple[int, ...] = ()) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process: exit 0 or 1 (warnings are a
    verdict), else the bench stops. The CPU seconds are the process's and its children's, and
    those the processes under ``cluster`` (pids) spent meanwhile: on a loaded machine the
    wall clock also counts other processes' turns, the CPU seconds do not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    served = tree_cpu(cluster)
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, cwd=cwd, env=env)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
           + tree_cpu(cluster) - served)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:8])}... exited {done.returncode}:\n"
                         f"{done.stdout.strip()[-3000:]}")
    return took, cpu


def tree_cpu(roots: tuple[int, ...]) -> float:
    """CPU seconds (user + system) the processes ``roots`` and their descendants have spent."""
    if not roots:
        return 0.0
    stats: dict[int, tuple[int, float]] = {}  # pid -> (ppid, seconds)
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    inside = set(roots)
    grew = True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in inside} - inside
        inside |= more
        grew = bool(more)
    return sum(stats[pid][1] for pid in inside if pid in stats)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dask() -> list[str]:
    return [PYTHON[0], "-m", "dask"]


@contextlib.contextmanager
def fresh_cluster(workers: int, timeout: float) -> Iterator[tuple[str, tuple[int, ...]]]:
    """A `dask scheduler` and `dask worker --nworkers N --nthreads 1` (with nannies, as a
    user starts them), without this tree on their path: its address and its pids, once all
    N are up."""
    from distributed import Client

    tmp = tempfile.mkdtemp(prefix="envcheck-scale-")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = _env(with_tree=False)
    log = open(Path(tmp, "cluster.log"), "w")  # noqa: SIM115 - closed below
    procs = [subprocess.Popen(
        [*_dask(), "scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT, cwd=tmp, env=env)]
    try:
        procs.append(subprocess.Popen(
            [*_dask(), "worker", address, "--nworkers", str(workers), "--nthreads", "1",
             "--no-dashboard", "--host", "127.0.0.1", "--local-directory", tmp],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp, env=env))
        with Client(address, timeout=timeout) as c:
            c.wait_for_workers(workers, timeout=timeout)
        yield address, tuple(p.pid for p in procs)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _on_fresh(workers: int, cmd: list[str], env: dict[str, str], timeout: float
              ) -> tuple[float, float]:
    """``cmd`` with ADDR replaced by a fresh cluster's address: wall and CPU seconds."""
    with fresh_cluster(workers, timeout) as (address, pids):
        return wall([address if c == "ADDR" else c for c in cmd], env, tempfile.gettempdir(),
                    timeout, pids)


def _envcheck() -> list[str]:
    """The command a user types: the venv's console script, or this tree's `python -m`."""
    if TREE[0]:
        return [sys.executable, "-m", "envcheck"]
    return [str(Path(PYTHON[0]).with_name("envcheck"))]


def bench_cluster(workers: int, pairs: int, smoke: str, timeout: float) -> dict[str, object]:
    ours = [*_envcheck(), "verify", "cluster", "ADDR", "--quiet",
            "--smoke", smoke, "--timeout", str(int(timeout))]
    bare = [PYTHON[0], "-c", BARE_CLIENT, "ADDR"]
    a, b = [], []
    for i in range(pairs):
        order = [(ours, _env(True), a), (bare, _env(False), b)]
        for cmd, env, into in order if i % 2 == 0 else order[::-1]:
            into.append(_on_fresh(workers, cmd, env, timeout))
    return _row(workers, a, b)


def bench_job(ranks: int, pairs: int, timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "bare_job.py")
        script.write_text(BARE_JOB)
        run = [PYTHON[0], "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(ranks)]
        ours = [*run, "-m", "envcheck", "verify", "job", "--timeout", str(int(timeout))]
        bare = [*run, str(script)]
        a, b = [], []
        for i in range(pairs):
            order = [(ours, _env(True), a), (bare, _env(False), b)]
            for cmd, env, into in order if i % 2 == 0 else order[::-1]:
                into.append(wall(cmd, env, tmp, timeout + 60))  # ranks are children
    return _row(ranks, a, b)


def _row(n: int, ours: list[tuple[float, float]], bare: list[tuple[float, float]]
         ) -> dict[str, object]:
    ratios = [x[0] / y[0] for x, y in zip(ours, bare, strict=True)]
    cpu = [x[1] / y[1] for x, y in zip(ours, bare, strict=True)]
    return {"n": n, "ours": statistics.median(x[0] for x in ours),
            "bare": statistics.median(y[0] for y in bare), "ratio": statistics.median(ratios),
            "spread": quartiles(ratios), "ours_cpu": statistics.median(x[1] for x in ours),
            "bare_cpu": statistics.median(y[1] for y in bare),
            "cpu_ratio": statistics.median(cpu), "load": load_average()}


def slope(rows: list[dict[str, object]], key: str) -> float:
    """Seconds per worker (rank): the least-squares slope of ``key`` over the sizes."""
    xs = [float(r["n"]) for r in rows]  # type: ignore[arg-type]
    ys = [float(r[key]) for r in rows]  # type: ignore[arg-type]
    if len(xs) < 2:
        return float("nan")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    covariance = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return covariance / sum((x - mx) ** 2 for x in xs)


def _print_rows(what: str, unit: str, rows: list[dict[str, object]], bare: str) -> None:
    print(f"\n{what}")
    print(f"| {unit} | envcheck | {bare} | ratio (quartiles) | CPU s: envcheck, {bare}, "
          "ratio | load average |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['ours']:.2f} s | {r['bare']:.2f} s | {r['ratio']:.2f} "
              f"({r['spread']}) | {r['ours_cpu']:.1f}, {r['bare_cpu']:.1f}, "
              f"{r['cpu_ratio']:.2f} | {r['load']} |")
    if len(rows) > 1:
        print(f"slope per {unit[:-1]}: envcheck {slope(rows, 'ours') * 1e3:.0f} ms "
              f"({slope(rows, 'ours_cpu') * 1e3:.0f} CPU ms), bare "
              f"{slope(rows, 'bare') * 1e3:.0f} ms ({slope(rows, 'bare_cpu') * 1e3:.0f} CPU ms)")


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="8,32,64", help="Dask workers, comma separated")
    ap.add_argument("--ranks", default="4,16,32", help="gloo ranks, comma separated")
    ap.add_argument("--pairs", type=int, default=3, help="alternating pairs per size")
    ap.add_argument("--smoke", default="submit,array",
                    help="verify cluster's --smoke: the work the bare client does")
    ap.add_argument("--judge-workers", type=int, default=1000)
    ap.add_argument("--judge-hosts", type=int, default=125)
    ap.add_argument("--judge-ranks", type=int, default=1000)
    ap.add_argument("--only", default="cluster,job,judge", help="which parts to run")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--tree", action="store_true",
                    help="run this tree as `python -m envcheck`, not a pip install of it")
    args = ap.parse_args(argv)
    parts = set(args.only.split(","))
    with contextlib.ExitStack() as stack:
        TREE[0] = args.tree or not parts & {"cluster", "job"}  # the judge runs here
        if not TREE[0]:
            PYTHON[0] = stack.enter_context(installed_venv())
        _run(args, parts)
    return 0


def _run(args: argparse.Namespace, parts: set[str]) -> None:
    how = "this tree (python -m envcheck)" if TREE[0] else "envcheck pip-installed in a venv"
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, {how}, load average {load_average()}")
    if "judge" in parts:
        for line in (judge_cluster(args.judge_workers, args.judge_hosts),
                     judge_job(args.judge_ranks)):
            print(line, flush=True)
    if "cluster" in parts:
        rows = [bench_cluster(n, args.pairs, args.smoke, args.timeout)
                for n in _sizes(args.workers)]
        _print_rows(f"verify cluster --smoke {args.smoke}, each on a fresh cluster",
                    "workers", rows, "bare client")
    if "job" in parts:
        rows = [bench_job(n, args.pairs, args.timeout) for n in _sizes(args.ranks)]
        _print_rows("verify job under torchrun --standalone, gloo", "ranks", rows,
                    "bare torchrun")


if __name__ == "__main__":
    raise SystemExit(main())
