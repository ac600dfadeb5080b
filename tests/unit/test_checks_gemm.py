"""gemm: the level 2 matrix multiplies judged on facts built here (right, fast enough), the
datasheet table's matching, and the child's lines turned into facts."""

from __future__ import annotations

import json
import math

import pytest

from envcheck.report import Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import GemmRun, GpuHealth, facts_from_dict, facts_to_dict
from envcheck.verify.node.checks.gpu.gemm import check_gemm, judge_gemm
from envcheck.verify.node.datasheet import PEAKS, peak_for
from envcheck.verify.node.gemm import TOLERANCE, gemm_runs
from tests.support.factories import node

H100 = "NVIDIA H100 80GB HBM3"


def run(name: str = H100, dtype: str = "bfloat16", tflops: float = 674.4, err: float = 3e-3,
        **kw: object) -> GemmRun:
    return GemmRun(0, name, dtype, 8192, tflops, err, TOLERANCE[dtype], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("Tesla V100-SXM2-32GB", "V100 SXM2"),
        ("Tesla V100-PCIE-16GB", "V100 PCIe"),
        ("NVIDIA GeForce RTX 3090", "RTX 3090"),
        ("NVIDIA GeForce RTX 3090 Ti", None),
        ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
        ("NVIDIA TITAN Xp", "TITAN Xp"),
        ("NVIDIA B200", None),
    ],
)
def test_datasheet_rows_match_nvml_names(name: str, model: str | None) -> None:
    peak = peak_for(name)
    assert (peak.model if peak else None) == model


def test_every_row_cites_a_source() -> None:
    assert all(p.source.startswith("https://") and p.fp32 > 0 for p in PEAKS)


def test_healthy_h100_passes_as_measured() -> None:
    # the numbers an H100 80GB HBM3 gave (torch 2.11, 2026-11-23)
    r = judge_gemm(run(dtype="float32", tflops=51.5, err=3.1e-6))
    assert r.status is Status.PASS and "77% of H100 SXM's dense peak 67" in r.message
    assert judge_gemm(run()).status is Status.PASS


def test_slow_gpu_fails_naming_it_with_its_clocks() -> None:
    r = judge_gemm(run(tflops=300.0, sm_clock_min_mhz=1095, temperature_max_c=87,
                       clocks_event_reasons=0x20 | 0x1))
    assert r.status is Status.FAIL
    assert r.message.startswith("GPU 0 (NVIDIA H100 80GB HBM3): bfloat16 8192x8192 300.0 TFLOPS")
    assert "SM clock down to 1095 MHz" in r.message and "87 C" in r.message
    assert "software thermal slowdown" in r.message and "idle" not in r.message
    assert judge_gemm(run(tflops=500.0)).status is Status.WARN


def test_wrong_result_fails_whatever_the_speed() -> None:
    r = judge_gemm(run(err=0.4))
    assert r.status is Status.FAIL and "differs from float64 by 4.00e-01" in r.message
    assert "drain the node" in r.fix
    assert judge_gemm(run(err=math.inf)).status is Status.FAIL  # NaN in the product


def test_not_judged_without_a_row_or_a_tensor_peak() -> None:
    r = judge_gemm(run(name="NVIDIA B200", tflops=5.0))
    assert r.status is Status.PASS and "model not in the datasheet table" in r.message
    r = judge_gemm(run(name="NVIDIA TITAN Xp", dtype="float16", tflops=0.2, err=1e-3))
    assert r.status is Status.PASS and "no tensor-core peak" in r.message
    r = judge_gemm(run(name="NVIDIA TITAN Xp", dtype="float32", tflops=3.0, err=1e-6))
    assert r.status is Status.FAIL  # 25 % of 12.1


def test_error_and_no_run() -> None:
    r = judge_gemm(GemmRun(1, H100, "", error="OutOfMemoryError: CUDA out of memory"))
    assert r.status is Status.FAIL and "GPU 1" in r.message
    [r] = check_gemm(node(1), Expectations())
    assert r.status is Status.SKIP


def test_child_lines_become_facts_with_the_reads_during_the_gemm() -> None:
    lines = [
        json.dumps({"phase": "gemm", "device": 0}),
        json.dumps({"gemm": 0, "dtype": "float32", "n": 8192, "tflops": 51.5, "err": 3e-6,
                    "tf32": False}),
        '{"gemm": 0, "dtype": "bfloat16", "n": 8192, "tflops": 674.4, "err": NaN}',
        "not json",
    ]
    during = {3: [GpuHealth(3, sm_clock_mhz=1980, temperature_c=50, clocks_event_reasons=4),
                  GpuHealth(3, sm_clock_mhz=1755, temperature_c=61, clocks_event_reasons=1)]}
    runs = gemm_runs(lines, [3], {3: H100}, during, "torch")
    assert [(r.index, r.dtype, r.tflops) for r in runs] == [(3, "float32", 51.5),
                                                            (3, "bfloat16", 674.4)]
    assert runs[0].sm_clock_min_mhz == 1755 and runs[0].temperature_max_c == 61
    assert runs[0].clocks_event_reasons == 5 and math.isinf(runs[1].max_rel_error)
    facts = node(1, gemm=runs[:1])
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(facts)))) == facts
