"""verify node --level 2's matrix multiplies: the child code that runs them after the memory
pass, and its JSON lines turned into GemmRun facts with what NVML read during each.

Per visible GPU and dtype (float32 with TF32 off, then bfloat16, or float16 where the GPU has
no BF16), the child multiplies two n x n matrices of uniform [-1, 1) values, compares the first
ROWS rows of the product with the same product in float64 on the GPU (the inputs as rounded to
the dtype, so only the multiply's own error counts), then, after a quarter second of
multiplies (warm-up), times back-to-back multiplies into the same output for `seconds` and
prints TFLOPS (2 n^3 per multiply). Meanwhile load.py reads only that GPU's clock and
temperature through NVML (three calls every 0.25 s).
"""

from __future__ import annotations

import json
import math

from envcheck.verify.facts import GemmRun, GpuHealth

N = 8192  # large enough for cuBLAS to reach its peak kernels on every GPU in the table
ROWS = 64  # rows checked against float64
# max |C - C_fp64| / max |C_fp64|: float32 (sqrt(n) * 2^-24 ~ 1e-5 typical), TF32 and 16-bit
# types (their output rounding alone is 2^-8 / 2^-11 of an element)
TOLERANCE = {"float32": 1e-4, "tf32": 5e-3, "bfloat16": 2e-2, "float16": 2e-2}

# Appended to load.LOAD_CHILD (`framework`, `out`, `fault` and `seconds` are defined there),
# followed by load.RUN_CHILD, which calls gemm(d) in device d's thread.
GEMM_CHILD = r"""
import math, os
N, ROWS = N_VALUE, ROWS_VALUE
gemm_seconds = max(1.0, seconds / 4)

def timed(run, sync):
    # warm-up: cuBLAS settles on its kernel over the first calls and the clock on the
    # multiply's power draw: time only what follows a quarter second of multiplies
    t = time.perf_counter()
    while time.perf_counter() - t < min(0.25, gemm_seconds / 4):
        for _ in range(4):
            run()
        sync()
    k, t = 0, time.perf_counter()
    while True:
        for _ in range(4):
            run()
        k += 4
        sync()
        el = time.perf_counter() - t
        if el >= gemm_seconds:
            return 2.0 * N ** 3 * k / el / 1e12

def gemm_torch(d):
    torch.backends.cuda.matmul.allow_tf32 = False
    tf32 = os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1"
    dev = torch.device("cuda", d)
    half = torch.bfloat16 if torch.cuda.get_device_capability(d) >= (8, 0) else torch.float16
    for dt in (torch.float32, half):
        g = torch.Generator(device=dev)
        g.manual_seed(1234 + d)
        a = (torch.rand(N, N, device=dev, generator=g) * 2 - 1).to(dt)
        b = (torch.rand(N, N, device=dev, generator=g) * 2 - 1).to(dt)
        c = torch.matmul(a, b)
        ref = a[:ROWS].double() @ b.double()
        err = ((c[:ROWS].double() - ref).abs().max() / ref.abs().max()).item()
        tflops = timed(lambda: torch.matmul(a, b, out=c), lambda: torch.cuda.synchronize(d))
        out(gemm=d, dtype=str(dt).split(".")[-1], n=N, tflops=tflops, err=err,
            tf32=tf32 and dt == torch.float32)
        del a, b, c, ref
        torch.cuda.empty_cache()

def gemm_cupy(d):
    tf32 = os.environ.get("CUPY_TF32") == "1"
    with cupy.cuda.Device(d):
        rs = cupy.random.RandomState(1234 + d)
        for dt in (cupy.float32, cupy.float16):
            a = (rs.random_sample((N, N), dtype=cupy.float32) * 2 - 1).astype(dt)
            b = (rs.random_sample((N, N), dtype=cupy.float32) * 2 - 1).astype(dt)
            c = cupy.matmul(a, b)
            ref = a[:ROWS].astype(cupy.float64) @ b.astype(cupy.float64)
            err = float(cupy.abs(c[:ROWS].astype(cupy.float64) - ref).max() / cupy.abs(ref).max())
            sync = cupy.cuda.Device(d).synchronize
            tflops = timed(lambda: cupy.matmul(a, b, out=c), sync)
            out(gemm=d, dtype=cupy.dtype(dt).name, n=N, tflops=tflops, err=err,
                tf32=tf32 and dt == cupy.float32)
            del a, b, c, ref
            cupy.get_default_memory_pool().free_all_blocks()

def gemm(d):
    try:
        (gemm_torch if framework == "torch" else gemm_cupy)(d)
    except Exception as e:
        out(gemm=d, **fault(e))
""".replace("N_VALUE", str(N)).replace("ROWS_VALUE", str(ROWS))


def gemm_runs(
    lines: list[str],
    order: list[int | None],
    names: dict[int, str],
    during: dict[int, list[GpuHealth]],
    framework: str,
) -> tuple[GemmRun, ...]:
    """GemmRun facts from the child's lines; `during`: NVML index -> reads taken while that
    GPU's multiplies ran."""
    runs = []
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "gemm" not in msg:
            continue
        d = int(msg["gemm"])
        index = order[d] if d < len(order) and order[d] is not None else d
        reads = during.get(index, [])
        clocks = [h.sm_clock_mhz for h in reads if h.sm_clock_mhz is not None]
        temps = [h.temperature_c for h in reads if h.temperature_c is not None]
        reasons = 0
        for h in reads:
            reasons |= h.clocks_event_reasons or 0
        dtype = str(msg.get("dtype", ""))
        tf32 = bool(msg.get("tf32", False))
        err = float(msg.get("err", -1.0))
        runs.append(GemmRun(
            index=index,
            name=names.get(index, ""),
            dtype=dtype,
            n=int(msg.get("n", 0)),
            tflops=float(msg.get("tflops", 0.0)),
            max_rel_error=err if not math.isnan(err) else math.inf,
            tolerance=TOLERANCE["tf32" if tf32 else dtype] if dtype in TOLERANCE else 0.0,
            tf32=tf32,
            framework=framework,
            error=str(msg.get("error", "")),
            out_of_memory=bool(msg.get("oom", False)),
            sm_clock_min_mhz=min(clocks) if clocks else None,
            temperature_max_c=max(temps) if temps else None,
            clocks_event_reasons=reasons,
        ))
    return tuple(runs)
