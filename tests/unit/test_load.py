"""verify node --level 2 / 3: the load's judgement, the child on this machine, the CLI."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys

import pytest

from envcheck.cli import build_parser, main
from envcheck.report import Status
from envcheck.verify.facts import GpuHealth
from envcheck.verify.node.load import LOAD_CHILD, judge_load, merge_under_load


def _lines(*msgs: dict) -> str:
    return "\n".join(json.dumps(m) for m in msgs) + "\n"


def test_each_device_s_pass_names_its_nvml_index_and_copy_bandwidth():
    out = _lines({"devices": 2}, {"device": 0, "mem_ok": True, "h2d": 24.1, "d2h": 25.3},
                 {"device": 1, "mem_ok": True, "h2d": 23.9, "d2h": 25.0})
    results, measurements = judge_load(out, "", 0, [5, 7], "torch")
    assert [r.status for r in results] == [Status.PASS, Status.PASS]
    assert results[0].message.startswith("GPU 5: 256 MiB write/read pass; host->GPU 24.1 GB/s")
    assert [(m.name, m.node, m.value) for m in measurements][:2] == [
        ("h2d pinned 256 MiB (torch)", "GPU 5", 24.1), ("d2h pinned 256 MiB (torch)", "GPU 5", 25.3)
    ]


def test_wrong_data_back_or_a_failed_copy_fails():
    out = _lines({"devices": 2}, {"device": 0, "mem_ok": False, "h2d": 1.0, "d2h": 1.0},
                 {"device": 1, "error": "RuntimeError: CUDA error: uncorrectable ECC error"})
    results, _ = judge_load(out, "", 0, [0, 1], "cupy")
    assert [r.status for r in results] == [Status.FAIL, Status.FAIL]
    assert "read back different" in results[0].message and "ECC" in results[1].message
    assert all(r.fix for r in results)


def test_a_child_that_dies_midway_is_an_error_with_its_last_words():
    out = _lines({"devices": 2}, {"device": 0, "mem_ok": True, "h2d": 1.0, "d2h": 1.0})
    results, _ = judge_load(out, "Traceback...\nSegmentation fault", -11, [0, 1], "torch")
    assert [r.status for r in results] == [Status.PASS, Status.ERROR]
    assert "Segmentation fault" in results[1].message


def test_the_pcie_link_under_load_is_the_best_seen_during_it():
    idle = GpuHealth(0, pcie_gen=1, pcie_width=16, nvlinks=())
    busy = GpuHealth(0, pcie_gen=5, pcie_width=16)
    final = (GpuHealth(0, pcie_gen=2, pcie_width=16, pcie_replays=3),)
    [merged] = merge_under_load([(idle,), (busy,), (idle,)], final)
    assert (merged.pcie_gen, merged.pcie_width, merged.pcie_replays) == (5, 16, 3)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_the_load_child_runs_with_torch_here_and_says_it_sees_no_cuda_device():
    proc = subprocess.run([sys.executable, "-c", LOAD_CHILD, "torch", "0.2"],
                          capture_output=True, text=True, timeout=300)
    if '"devices": 0' not in proc.stdout:
        pytest.skip("torch sees a CUDA device here: tests/gpu covers the load")
    results, measurements = judge_load(proc.stdout, proc.stderr, proc.returncode, [], "torch")
    [r] = results
    assert r.status == Status.WARN and "torch sees no CUDA device" in r.message
    assert "--level 1" in r.fix
    assert measurements == []


def _report(tmp_path, *argv: str) -> tuple[int, dict]:
    out = tmp_path / "r.json"
    rc = main(["verify", "node", "--quiet", "--no-plugins", "--json", str(out), *argv])
    return rc, json.loads(out.read_text())


def test_level_2_and_3_asked_for_where_they_cannot_run_warn_saying_why(tmp_path):
    rc, report = _report(tmp_path, "--level", "3")
    got = {r["check"]: r for r in report["results"]}
    assert report["environment"]["level"] == "3"
    if got["gpu-load"]["status"] != "pass":  # a GPU machine with torch runs it (tests/gpu)
        assert got["gpu-load"]["status"] == "warn" and "level 2 load not run" in \
            got["gpu-load"]["message"]
        assert got["gpu-load"]["fix"]
        assert rc >= 1
    assert got["level-3"]["status"] == "warn" and "verify cluster --bench" in \
        got["level-3"]["message"]
    rc, report = _report(tmp_path, "--load")
    assert report["environment"]["level"] == "2"


def test_help_documents_levels_and_expect_gpus_0(capsys):
    parser = build_parser(["verify", "node"])
    with pytest.raises(SystemExit):
        parser.parse_args(["verify", "node", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0: expect none" in text
    assert "--level {1,2,3}" in text and "verify cluster --bench" in text


def test_the_framework_is_chosen_from_the_environment_s_own_packages():
    from envcheck.verify.node.load import pick_framework
    from tests.support.factories import h200x2

    facts = h200x2()
    assert pick_framework(facts) == ""
    assert pick_framework(dataclasses.replace(facts, python_packages={"cupy-cuda12x": "13.3"})) \
        == "cupy"
    assert pick_framework(dataclasses.replace(facts, packages={"pytorch": "2.1.0",
                                                               "cupy": "13.3"})) == "torch"
