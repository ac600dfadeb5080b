"""horovod: the -cb parser on the output a user pasted, the probe's line reader, and the check
on NodeFacts built here (GPU nodes, builds against another torch, builds without NCCL)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from envcheck.report import Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import HorovodBuild, HorovodFramework, facts_from_dict, facts_to_dict
from envcheck.verify.facts.horovod import parse_check_build, parse_probe_lines
from envcheck.verify.node.checks.env.horovod import check_horovod
from tests.support.factories import A100, node

DATA = Path(__file__).parents[1] / "data"
SEED_CB = (DATA / "horovodrun-cb-v0.23.0.txt").read_text()


def torch_ext(built_with: str = "2.13.0+cpu", installed: str = "2.13.0+cpu", error: str = "",
              ) -> HorovodFramework:
    return HorovodFramework("torch", built=True, available=not error, installed=installed,
                            built_with=built_with, error=error)


def build(*frameworks: HorovodFramework, ops: tuple[str, ...] = ("Gloo",), gpu: str = "",
          controllers: tuple[str, ...] = ("Gloo",)) -> HorovodBuild:
    return HorovodBuild("0.28.1", frameworks or (torch_ext(),), controllers, ops, gpu=gpu,
                        source="probe")


def judge(b: HorovodBuild, n_gpus: int = 0) -> list:
    return check_horovod(node(n_gpus, A100, horovod=b), Expectations())


def test_the_pasted_check_build_output_parses_as_printed() -> None:
    b = parse_check_build(SEED_CB)
    assert b.version == "0.23.0" and b.source == "horovodrun -cb"
    assert [(f.name, f.available) for f in b.frameworks] == [
        ("tensorflow", True), ("torch", True), ("mxnet", False)]
    assert b.controllers == ("MPI", "Gloo")
    assert b.tensor_ops == ("NCCL", "MPI", "Gloo")


def test_the_pasted_build_passes_on_an_eight_gpu_node() -> None:
    # the user's working install: NCCL ops on the GPUs; -cb names no versions, so nothing to
    # compare them with and nothing is made up
    results = judge(parse_check_build(SEED_CB), n_gpus=8)
    assert [r.status for r in results] == [Status.PASS, Status.PASS]
    assert "frameworks TensorFlow, PyTorch; controllers MPI, Gloo; tensor operations NCCL, " \
        "MPI, Gloo" in results[0].message
    assert "NCCL on the 8 GPU(s)" in results[1].message


@pytest.mark.parametrize("text", [
    "", "Horovod v0.28.1:\n", "usage: horovodrun [-h] ...\n",
    SEED_CB.replace("PyTorch", "Caffe2"),
    SEED_CB.split("Available Tensor Operations:")[0],
])
def test_text_that_is_not_check_build_output_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_check_build(text)


def test_a_build_against_another_torch_fails_naming_both_versions_and_the_rebuild() -> None:
    err = ("ImportError: .../horovod/torch/mpi_lib_v2.cpython-311-x86_64-linux-gnu.so: "
           "undefined symbol: _ZN3c1017RegisterOperatorsD1Ev")
    [r] = judge(build(torch_ext("2.12.0+cpu", "2.13.0+cpu", err)))
    assert r.status is Status.FAIL
    assert "built against torch 2.12.0+cpu, but torch 2.13.0+cpu is installed" in r.message
    assert "undefined symbol" in r.message
    assert "pip install --no-cache-dir --force-reinstall" in r.fix
    assert "HOROVOD_WITH_PYTORCH=1" in r.fix and "horovod==0.28.1" in r.fix


def test_an_extension_that_imports_beside_another_torch_still_fails() -> None:
    # Horovod only warns then (check_installed_version); the job breaks later
    results = judge(build(torch_ext("2.12.0+cu121", "2.13.0+cpu")))
    assert [r.status for r in results] == [Status.FAIL]
    assert "torch 2.12.0+cu121" in results[0].message


def test_an_import_error_without_a_recorded_version_fails_with_the_error() -> None:
    [r] = judge(build(torch_ext("", "2.13.0+cpu", "ImportError: libc10.so: cannot open")))
    assert r.status is Status.FAIL and "libc10.so" in r.message


def test_an_extension_for_an_uninstalled_framework_warns() -> None:
    tf = HorovodFramework("tensorflow", built=True, built_with="2.21.0",
                          error="tensorflow does not import: ModuleNotFoundError: No module")
    statuses = [r.status for r in judge(build(tf, torch_ext()))]
    assert statuses == [Status.WARN]


def test_a_cpu_only_build_fails_on_a_gpu_node_and_passes_without_gpus() -> None:
    results = judge(build(), n_gpus=4)
    assert [r.status for r in results] == [Status.FAIL]
    assert "CPU-only build" in results[0].message
    assert "HOROVOD_GPU_OPERATIONS=NCCL" in results[0].fix
    assert [r.status for r in judge(build())] == [Status.PASS]


def test_a_cuda_build_without_nccl_warns_on_a_gpu_node() -> None:
    b = build(ops=("MPI", "Gloo"), controllers=("MPI", "Gloo"), gpu="CUDA")
    [r] = judge(b, n_gpus=2)
    assert r.status is Status.WARN and "through MPI / Gloo" in r.message
    assert "HOROVOD_GPU_OPERATIONS=NCCL" in r.fix and "HOROVOD_WITH_MPI=1" in r.fix


def test_a_rebuild_keeps_nccl() -> None:
    b = build(torch_ext("2.12.0", "2.13.0", "ImportError: undefined symbol"),
              ops=("NCCL", "Gloo"), gpu="CUDA")
    assert "HOROVOD_GPU_OPERATIONS=NCCL" in judge(b, n_gpus=2)[0].fix


def test_no_usable_framework_fails_and_no_horovod_skips() -> None:
    b = build(HorovodFramework("torch"), HorovodFramework("mxnet"))  # neither built
    [r] = judge(b)
    assert r.status is Status.FAIL and "no framework extension that imports" in r.message
    assert [r.status for r in judge(HorovodBuild())] == [Status.SKIP]
    [r] = judge(HorovodBuild(source="probe", error="import horovod: ModuleNotFoundError: x"))
    assert r.status is Status.FAIL


def test_probe_lines_a_crash_inside_an_extension_names_it() -> None:
    lines = [{"version": "0.28.1", "metadata": {"pytorch": "2.13.0+cpu"}},
             {"framework": "tensorflow", "built": False, "built_with": ""},
             {"start": "torch"}]
    b = parse_probe_lines("\n".join(json.dumps(x) for x in lines) + "\nnoise\n",
                          "crashed (signal 11)")
    torch = {f.name: f for f in b.frameworks}["torch"]
    assert torch.error == "importing horovod.torch crashed (signal 11)" and not torch.available
    assert parse_probe_lines("", "timed out after 60 s").error == "probe timed out after 60 s"


def test_horovod_facts_survive_the_trip_between_processes() -> None:
    facts = node(0, A100, horovod=build(torch_ext("2.12.0", "2.13.0", "ImportError: x")))
    back = facts_from_dict(json.loads(json.dumps(facts_to_dict(facts))))
    assert back.horovod == facts.horovod
    assert dataclasses.replace(back, horovod=HorovodBuild()).horovod.present is False


def test_a_clean_answer_is_kept_and_read_back_without_a_child(tmp_path, monkeypatch) -> None:
    from envcheck.verify.facts import horovod as probe
    from envcheck.verify.facts.archs import cache_path

    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path))
    first = probe.start_horovod_probe()  # no Horovod in this venv: the child says so
    assert first.proc is not None and first.cached is None
    assert first.finish(60).error.startswith("import horovod: ModuleNotFoundError")
    assert not list(tmp_path.iterdir())  # a failed import is never kept
    kept = build(torch_ext("2.12.0+cpu", "2.13.0+cpu"))
    probe._keep(cache_path(("horovod", *probe.FRAMEWORKS), "horovod"), kept)
    again = probe.start_horovod_probe()
    assert again.proc is None and again.finish(60) == kept
