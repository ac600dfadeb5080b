"""verify node on real GPUs (marker gpu; skipped without a GPU; run on the device machine).

Needs pynvml and torch or cupy; not dask. Run: python3 -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.verify.facts import collect_node_facts, facts_from_dict
from envcheck.verify.shipping import standalone_source
from tests.support.gpus import HOLD_ONE, gpu_env, holder_argv, holding

pytestmark = pytest.mark.gpu


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


needs_framework = pytest.mark.skipif(
    not (_has_module("torch") or _has_module("cupy")), reason="needs torch or cupy"
)


def _verify_node(tmp_path: Path, *argv: str) -> tuple[int, dict, str]:
    out = tmp_path / "node.json"
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--json", str(out), *argv],
        capture_output=True,
        text=True,
        env=gpu_env(),
        timeout=300,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, report, proc.stdout + proc.stderr


def _facts_in_child(**env: str) -> dict:
    """The facts package's standalone script run in a fresh process with the given
    environment."""
    proc = subprocess.run(
        [sys.executable, "-"],
        input=standalone_source(),
        capture_output=True,
        text=True,
        env=gpu_env(**env),
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)


def test_nvml_facts_are_complete():
    f = collect_node_facts()
    assert f.nvml_error == "", f.nvml_error
    assert f.driver_version and f.cuda_driver_version
    for g in f.gpus:
        assert g.uuid.startswith(("GPU-", "MIG-")) and g.memory_total_mib > 1000
        assert g.compute_capability >= (3, 0) and g.pci_bus_id
    print(json.dumps([{k: v for k, v in vars(g).items() if k != "processes"} for g in f.gpus]))


def test_verify_node_expecting_every_gpu_passes(tmp_path):
    n = len(collect_node_facts().gpus)
    rc, report, text = _verify_node(tmp_path, "--expect-gpus", str(n))
    print(text)
    by = {r["check"]: r for r in report["results"]}
    assert by["driver"]["status"] == "pass"
    assert by["gpus"]["status"] == "pass" and f"{n} GPUs" in by["gpus"]["message"]
    assert by["busy-gpus"]["status"] == "pass", by["busy-gpus"]["message"]
    bad = [r for r in report["results"] if r["status"] in ("fail", "error")]
    assert not bad, bad
    # an installed-but-unasked UCX may only warn (e.g. ucx_info missing from a pip install);
    # so may the machine's own counters (the H200 pairs lent on 2026-11-24 log NVLink CRC
    # errors, a PCIe replay, and on one GPU 44 lifetime uncorrectable ECC errors with 7 rows
    # remapped): reported as counts, not judged as failures while none is new
    warned = [r for r in report["results"] if r["status"] == "warn"]
    counters = {"pcie": "PCIe replays", "nvlink": "since the driver loaded",
                "ecc": "uncorrectable ECC errors in its lifetime (none since the driver loaded)"}
    for r in warned:
        if r["check"] in counters:
            assert counters[r["check"]] in r["message"], r
    warns = {r["check"] for r in warned}
    assert warns <= {"ucx", *counters}, text
    assert rc == (1 if warns else 0), text


@needs_framework
def test_busy_check_names_the_pid_holding_memory_on_gpu_1(tmp_path):
    gpus = collect_node_facts().gpus
    target = 1 if len(gpus) > 1 else 0

    def listed(pid: int) -> bool:  # NVML lists the process shortly after the allocation
        return bool(collect_node_facts().gpus[target].processes)

    with holding(holder_argv(HOLD_ONE, target, 256), gpu_env(), listed) as (pid, _):
        rc, report, text = _verify_node(tmp_path, "--expect-gpus", str(len(gpus)))
        print(text)
        [busy] = [r for r in report["results"] if r["check"] == "busy-gpus"]
        assert busy["status"] == "fail", busy
        assert f"GPU {target} " in busy["message"] and f"pid {pid} (" in busy["message"]
        assert rc == 2
        rc, report, _ = _verify_node(tmp_path, "--allow-busy-gpus")
        [busy] = [r for r in report["results"] if r["check"] == "busy-gpus"]
        assert busy["status"] == "warn" and rc == 1


def test_cuda_visible_devices_1_leaves_one_gpu_with_gpu_1s_uuid():
    gpus = collect_node_facts().gpus
    if len(gpus) < 2:
        pytest.skip("needs 2 GPUs")
    data = _facts_in_child(CUDA_VISIBLE_DEVICES="1")
    facts = facts_from_dict(data)
    assert facts.visible_gpu_uuids == (gpus[1].uuid,)
    assert len(facts.gpus) == len(gpus)  # NVML still sees every GPU; CUDA will see one


@pytest.mark.skipif(not _has_module("torch"), reason="needs torch")
@pytest.mark.parametrize("value", ["1", "0,0", "0,1", "1,7"])
def test_visible_devices_rule_matches_what_torch_sees(value):
    gpus = collect_node_facts().gpus
    if len(gpus) < 2:
        pytest.skip("needs 2 GPUs")
    probe = (
        "import torch, json; n = torch.cuda.device_count();"
        "print(json.dumps([str(torch.cuda.get_device_properties(i).uuid) for i in range(n)]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=gpu_env(CUDA_VISIBLE_DEVICES=value),
        timeout=120,
        check=True,
    )
    torch_uuids = json.loads(proc.stdout.strip().splitlines()[-1])
    facts = facts_from_dict(_facts_in_child(CUDA_VISIBLE_DEVICES=value))
    assert [u.removeprefix("GPU-") for u in facts.visible_gpu_uuids] == torch_uuids, (
        value,
        facts.visible_devices_problem,
    )
