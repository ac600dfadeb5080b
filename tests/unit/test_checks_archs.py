"""compiled-arch: framework builds against GPUs' compute capability, on facts built here, and
the child probe run for real against this environment's CPU torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.report import Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import CompiledArchs, collect_node_facts
from envcheck.verify.facts.archs import parse_arch_lines
from envcheck.verify.node.checks.gpu.archs import check_compiled_arch, coverage, parse_arch
from tests.support.factories import A100, H200, RTX3090, node

# torch 2.11.0+cu130's list, as torch.cuda.get_arch_list() printed it on an H100 machine
TORCH_CU130 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
# torch 2.0.1+cu117's list: PTX only for the oldest
TORCH_CU117 = ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "compute_37")


def torch_build(archs: tuple[str, ...], cuda: str = "13.0") -> CompiledArchs:
    return CompiledArchs("torch", "2.11.0", cuda, archs)


def judge(model: str, *builds: CompiledArchs) -> list:
    return check_compiled_arch(node(2, model, compiled_archs=builds), Expectations())


def test_parse_arch() -> None:
    assert parse_arch("sm_86") == ("sm", (8, 6), "")
    assert parse_arch("sm_120") == ("sm", (12, 0), "")
    assert parse_arch("compute_90a") == ("compute", (9, 0), "a")
    assert parse_arch("sm_9") is None and parse_arch("gfx90a") is None


@pytest.mark.parametrize(
    ("archs", "cc", "want"),
    [
        (("sm_80",), (8, 6), ("sass", "sm_80")),  # same major, lower minor: runs
        (("sm_86",), (8, 0), ("", "")),  # higher minor: does not
        (("sm_80",), (9, 0), ("", "")),  # another major: does not
        (("sm_90a",), (9, 0), ("sass", "sm_90a")),
        (("sm_90a",), (10, 0), ("", "")),  # arch-specific: exact only
        (("sm_80", "compute_80"), (9, 0), ("ptx", "compute_80")),
        (("compute_90a",), (10, 0), ("", "")),
    ],
)
def test_cuda_compatibility_rules(archs: tuple, cc: tuple, want: tuple) -> None:
    assert coverage(archs, cc) == want


def test_sass_for_the_gpu_passes() -> None:
    [r] = judge(H200, torch_build(TORCH_CU130))
    assert r.status is Status.PASS
    assert "SASS sm_90 runs on GPU 0, GPU 1 (NVIDIA H200, 9.0)" in r.message


def test_gpu_newer_than_the_build_fails_with_the_wheel_to_install() -> None:
    [r] = judge(H200, torch_build(TORCH_CU117[:-1], "11.7"))
    assert r.status is Status.FAIL
    assert "no SASS sm_9x <= 9.0, no PTX <= 9.0" in r.message
    assert "https://download.pytorch.org/whl/cu128" in r.fix and "sm_90" in r.fix


def test_ptx_only_warns() -> None:
    [r] = judge(H200, torch_build(TORCH_CU117, "11.7"))  # compute_37 PTX JITs for 9.0
    assert r.status is Status.WARN and "only PTX compute_37" in r.message
    [r] = judge(H200, torch_build(("sm_70", "sm_80", "compute_80"), "12.1"))
    assert r.status is Status.WARN and "only PTX compute_80" in r.message


def test_cpu_only_torch_on_a_gpu_node_fails() -> None:
    [r] = judge(A100, CompiledArchs("torch", "2.13.0+cpu", "", ()))
    assert r.status is Status.FAIL and "CPU-only build" in r.message


def test_cupy_nvrtc_rules() -> None:
    old_nvrtc = CompiledArchs("cupy", "13.0.0", "11.7", ("sm_35", "sm_80", "sm_86"),
                              runtime_compiled=True)
    [r] = judge(RTX3090, old_nvrtc)
    assert r.status is Status.PASS and "NVRTC builds sm_86" in r.message
    [r] = judge(H200, old_nvrtc)  # 9.0 beyond NVRTC 11.7: PTX compute_86, JIT by the driver
    assert r.status is Status.WARN and "compute_86" in r.message


def test_unknown_architectures_skip_and_no_gpu_skips() -> None:
    xgb = CompiledArchs("xgboost", "3.0", "12.8", (), error="xgboost.build_info() does not list")
    [r] = judge(A100, xgb)
    assert r.status is Status.SKIP and "does not list" in r.message
    [r] = check_compiled_arch(node(0), Expectations())
    assert r.status is Status.SKIP


def test_probe_lines_and_a_dead_child() -> None:
    lines = 'noise\n{"framework": "torch", "version": "2.11", "cuda": "13.0", "archs": ["sm_90"]}\n'
    torch, cupy = parse_arch_lines(lines, ("torch", "cupy"), "probe exited -11: ")
    assert torch.archs == ("sm_90",) and cupy.error == "probe exited -11: "


@pytest.mark.slow
def test_probe_runs_in_a_child_and_its_answer_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # this environment's torch is the CPU wheel: a real child, a real import
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path))
    facts = collect_node_facts(arch_probe=True)
    by_name = {c.framework: c for c in facts.compiled_archs}
    assert by_name["torch"].version.startswith("2.") and by_name["torch"].cuda == ""
    assert by_name["torch"].error == "" and by_name["torch"].archs == ()
    [kept] = tmp_path.glob("archs-*.json")
    # the next collection reads the file, not a child: an edited record comes back as written
    kept.write_text(kept.read_text().replace('"cuda": ""', '"cuda": "12.8"', 1))
    again = {c.framework: c for c in collect_node_facts(arch_probe=True).compiled_archs}
    assert again["torch"].cuda == "12.8"
    # another CUDA library path is another key: probed afresh
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    fresh = {c.framework: c for c in collect_node_facts(arch_probe=True).compiled_archs}
    assert fresh["torch"].cuda == "" and len(list(tmp_path.glob("archs-*.json"))) == 2
