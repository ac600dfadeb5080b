"""verify node --level 2 on every GPU at once: what NVML reads while the devices' threads are in
their phases, and a load out of memory on a GPU another process held (facts built here)."""

from __future__ import annotations

import dataclasses
import json

from envcheck.cli import main
from envcheck.report import Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import GemmRun, GpuHealth, GpuProcess, facts_to_dict
from envcheck.verify.node.checks.gpu.gemm import check_gemm
from envcheck.verify.node.checks.gpu.held import memory_held
from envcheck.verify.node.checks.gpu.pcie import check_pcie
from envcheck.verify.node.gemm import TOLERANCE, gemm_runs
from envcheck.verify.node.load import device_phases, held_unloaded, judge_load, reads_due
from tests.support.factories import H200, make_gpu, node

H200_TOTAL = make_gpu(0, H200).memory_total_mib
HOLDER = GpuProcess(pid=31337, used_mib=141_000, user="nobody", command="python3 hold.py")


def _lines(*msgs: dict) -> list[str]:
    return [json.dumps(m) + "\n" for m in msgs]


def _held_h200x2():
    """Two H200s; GPU 0's memory held by another user's process before the load."""
    facts = node(2, H200)
    gpus = (make_gpu(0, H200, processes=(HOLDER,)), facts.gpus[1])
    return dataclasses.replace(facts, gpus=gpus)


def test_each_device_s_last_announced_phase_is_its_phase():
    lines = _lines({"devices": 3}, {"phase": "load", "device": 0}, {"phase": "load", "device": 1},
                   {"device": 0, "mem_ok": True, "h2d": 50.0, "d2h": 50.0},
                   {"phase": "gemm", "device": 0}, {"gemm": 0, "dtype": "float32"},
                   {"phase": "end", "device": 0}) + ["not json\n"]
    assert device_phases(lines) == {0: "end", 1: "load"}


def test_while_any_gpu_multiplies_only_the_multiplying_gpus_clocks_are_read():
    order = [5, 7, 9]  # CUDA device d -> NVML index
    assert reads_due({0: "gemm", 1: "load", 2: "gemm"}, order, [5, 7, 9]) == ([], [5, 9])
    assert reads_due({1: "gemm"}, order, [5, 7, 9]) == ([], [7])


def test_with_no_gpu_multiplying_every_loaded_gpu_is_read_in_full():
    order = [5, 7]
    assert reads_due({}, order, [5, 7]) == ([5, 7], [])  # before the threads announce
    assert reads_due({0: "load", 1: "load"}, order, [5, 7]) == ([5, 7], [])
    assert reads_due({0: "end", 1: "load"}, order, [5, 7]) == ([5, 7], [])
    assert reads_due({0: "end", 1: "end"}, order, [5, 7]) == ([5, 7], [])


def test_a_device_outside_the_visible_order_is_never_read_by_its_phase():
    assert reads_due({3: "gemm"}, [0, None], [0]) == ([0], [])
    assert reads_due({1: "gemm"}, [0, None], [0]) == ([0], [])


def test_n_gpus_load_lines_in_any_interleaving_give_one_pass_each():
    n = 8
    msgs = [{"devices": n}]
    msgs += [{"phase": "load", "device": d} for d in range(n)]
    msgs += [{"device": d, "mem_ok": True, "h2d": 50.0 + d, "d2h": 51.0}
             for d in reversed(range(n))]
    results, measurements = judge_load("".join(_lines(*msgs)), "", 0, list(range(n)), "torch")
    assert [r.status for r in results] == [Status.PASS] * n
    assert sorted(r.message.split(":")[0] for r in results) == [f"GPU {d}" for d in range(n)]
    assert len(measurements) == 2 * n


def test_out_of_memory_on_a_gpu_another_process_held_is_an_error_naming_it():
    facts = _held_h200x2()
    out = "".join(_lines(
        {"devices": 2},
        {"device": 0, "error": "OutOfMemoryError: CUDA out of memory.", "oom": True},
        {"device": 1, "mem_ok": True, "h2d": 50.0, "d2h": 51.0}))
    results, _ = judge_load(out, "", 0, [0, 1], "torch", facts)
    assert [r.status for r in results] == [Status.ERROR, Status.PASS]
    left = H200_TOTAL - 141_000 - 4
    assert results[0].message.startswith("GPU 0: the load could not run: out of memory")
    assert "pid 31337 (python3 hold.py), user nobody, 141000 MiB" in results[0].message
    assert f"{left} MiB of {H200_TOTAL} MiB left" in results[0].message
    assert "CUDA_VISIBLE_DEVICES" in results[0].fix


def test_out_of_memory_on_a_gpu_nobody_else_held_stays_the_gpu_s_failure():
    facts = node(2, H200)
    out = "".join(_lines(
        {"devices": 2},
        {"device": 0, "error": "OutOfMemoryError: CUDA out of memory.", "oom": True},
        {"device": 1, "error": "RuntimeError: CUDA error: an illegal memory access"}))
    results, _ = judge_load(out, "", 0, [0, 1], "torch", facts)
    assert [r.status for r in results] == [Status.FAIL, Status.FAIL]


def test_another_error_on_a_held_gpu_is_still_the_gpu_s_failure():
    facts = _held_h200x2()
    out = "".join(_lines({"devices": 1},
                         {"device": 0, "error": "RuntimeError: CUDA error: ECC error"}))
    [r], _ = judge_load(out, "", 0, [0], "torch", facts)
    assert r.status is Status.FAIL


def test_memory_held_by_no_listed_process_names_the_amount():
    facts = node(1, H200)
    facts = dataclasses.replace(facts, gpus=(make_gpu(0, H200, used_mib=140_000),))
    assert "140000 MiB used by no listed process" in memory_held(facts, 0)
    assert memory_held(node(1, H200), 0) == ""
    own = GpuProcess(pid=4000, used_mib=140_000)  # this process: not another's
    facts = dataclasses.replace(facts, gpus=(make_gpu(0, H200, processes=(own,)),))
    assert memory_held(facts, 0) == ""


def _gemm(index: int, **kw: object) -> GemmRun:
    base = dict(index=index, name=H200, dtype="bfloat16", n=8192, tflops=700.0, max_rel_error=3e-3,
                tolerance=TOLERANCE["bfloat16"])
    return GemmRun(**{**base, **kw})  # type: ignore[arg-type]


def test_the_gemm_check_errors_on_the_held_gpu_and_judges_the_others():
    facts = dataclasses.replace(_held_h200x2(), gemm=(
        _gemm(0, dtype="", tflops=0.0, max_rel_error=-1.0, out_of_memory=True,
              error="not run: the load before it ran out of memory"),
        _gemm(1)))
    results = check_gemm(facts, Expectations())
    assert [r.status for r in results] == [Status.ERROR, Status.PASS]
    assert "pid 31337" in results[0].message and results[1].message.startswith("GPU 1 ")


def test_an_out_of_memory_gemm_on_a_free_gpu_fails():
    facts = dataclasses.replace(node(1, H200), gemm=(
        _gemm(0, dtype="", out_of_memory=True, error="OutOfMemoryError: CUDA out of memory."),))
    [r] = check_gemm(facts, Expectations())
    assert r.status is Status.FAIL and "multiply failed" in r.message


def test_the_child_s_oom_flag_becomes_the_fact():
    lines = _lines({"gemm": 0, "error": "OutOfMemoryError: x", "oom": True},
                   {"gemm": 1, "dtype": "float32", "n": 8192, "tflops": 50.0, "err": 1e-6})
    runs = gemm_runs(lines, [0, 1], {0: H200, 1: H200}, {}, "torch")
    assert [r.out_of_memory for r in runs] == [True, False]


def test_saved_facts_with_a_held_gpu_exit_3_with_allow_busy_gpus(tmp_path):
    facts = dataclasses.replace(_held_h200x2(), gemm=(
        _gemm(0, dtype="", out_of_memory=True, error="not run: the load before it ran out of "
              "memory"), _gemm(1)))
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts_to_dict(facts)))
    out = tmp_path / "r.json"
    rc = main(["verify", "node", "--quiet", "--no-plugins", "--facts", str(path),
               "--allow-busy-gpus", "--json", str(out)])
    report = json.loads(out.read_text())
    gemm = [r for r in report["results"] if r["check"] == "gemm"]
    assert [r["status"] for r in gemm] == ["error", "pass"]
    assert [r["status"] for r in report["results"] if r["status"] == "fail"] == []
    assert rc == 3 and report["exit_code"] == 3


def test_a_held_gpu_the_load_never_ran_on_is_not_judged_under_load():
    facts = _held_h200x2()
    out = "".join(_lines(
        {"devices": 2},
        {"device": 0, "error": "AcceleratorError: CUDA error: out of memory", "oom": True},
        {"device": 1, "mem_ok": True, "h2d": 50.0, "d2h": 51.0}))
    assert held_unloaded(out, [0, 1], facts) == {0}
    assert held_unloaded(out, [0, 1], node(2, H200)) == set()  # nobody held it: the GPU's own
    idle = tuple(GpuHealth(i, pcie_gen=1, pcie_width=16, pcie_gen_max=5, pcie_width_max=16)
                 for i in (0, 1))
    loaded = (GpuHealth(1, pcie_gen=5, pcie_width=16, pcie_gen_max=5, pcie_width_max=16),)
    facts = dataclasses.replace(facts, gpu_health=idle, gpu_health_after=loaded)
    statuses = {r.status: r.message for r in check_pcie(facts, Expectations())}
    assert Status.FAIL not in statuses and "GPU 0" in statuses[Status.WARN]
