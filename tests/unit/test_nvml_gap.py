"""GPUs the kernel driver lists but NVML cannot read: the driver and GPUs are read from /proc
and /dev without NVML, and every GPU check fails naming the missing part and how to get it.

The /proc files are a real H100 machine's (tests/data/nvidia-proc, see SOURCES.md), the device
nodes are made with mknod, and the collector and `verify node` run for real against them
through ENVCHECK_NVIDIA_ROOT, the documented test and diagnostic hook.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.report import Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import (
    NVML_MISMATCH,
    NVML_NO_LIBRARY,
    NVML_NO_MODULE,
    KernelDriver,
    ProcGpu,
    collect_node_facts,
    facts_from_dict,
    facts_to_dict,
    parse_information,
    read_kernel_driver,
)
from envcheck.verify.node.checks import BUILTIN_CHECKS, run_node_checks
from tests.support.factories import no_driver_node

DATA = Path(__file__).parents[1] / "data" / "nvidia-proc" / "h100-open-580"
REPO = Path(__file__).resolve().parents[2]
MODEL = "NVIDIA H100 80GB HBM3"
# Every check that judges GPUs through NVML: none may pass or skip on such a machine.
GPU_CHECKS = ("driver", "gpus", "cuda-visible-devices", "busy-gpus", "compute-capability",
              "ecc", "pcie", "nvlink", "clocks", "persistence", "mig", "compute-mode")
HAS_NVML_GPU = bool(collect_node_facts().gpus)


def make_root(tmp_path: Path, minors: tuple[int, ...] = (0,)) -> Path:
    """A copy of the real machine's /proc/driver/nvidia, and its /dev nodes made with mknod."""
    root = tmp_path / "nvroot"
    shutil.copytree(DATA, root)
    dev = root / "dev"
    dev.mkdir()
    for m in minors:
        os.mknod(dev / f"nvidia{m}", 0o666 | stat.S_IFCHR, os.makedev(195, m))
    os.mknod(dev / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    return root


def test_reader_sees_the_driver_and_gpu_of_the_real_files(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "dev" / "nvidia7").write_text("a regular file is not a device node")
    kd = read_kernel_driver(str(root / "proc"), str(root / "dev"))
    assert kd.version == "580.159.04"
    assert kd.version_line.startswith("NVRM version: NVIDIA UNIX Open Kernel Module")
    assert kd.gpus == (
        ProcGpu(
            pci_bus_id="0000:00:06.0",
            model=MODEL,
            uuid="GPU-5c83b59a-4a8d-ea7e-a39b-ae181401a93c",
            minor=0,
            bus_type="PCIe",
            video_bios="96.00.da.00.0c",
        ),
    )
    assert kd.device_nodes == (str(root / "dev" / "nvidia0"),)
    assert kd.control_node and kd.error == ""


def test_proprietary_module_version_line_and_excluded_gpu() -> None:
    from envcheck.verify.facts.procfs import _VERSION

    line = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  "
            "Thu Oct 19 18:56:32 UTC 2023")
    found = _VERSION.search(line)
    assert found is not None and found.group(1) == "535.129.03"
    gpu = parse_information("0000:3b:00.0", "Model: \t\t Tesla V100\nGPU Excluded:\t Yes\n")
    assert gpu.excluded and gpu.minor == -1 and gpu.pci_bus_id == "0000:3b:00.0"


def test_reader_without_module_and_with_hostile_files(tmp_path: Path) -> None:
    kd = read_kernel_driver(str(tmp_path / "noproc"), str(tmp_path / "nodev"))
    assert kd == KernelDriver(error=f"{tmp_path}/noproc/driver/nvidia absent: the nvidia "
                                    "kernel module is not loaded")
    root = make_root(tmp_path)
    info = next((root / "proc" / "driver" / "nvidia" / "gpus").iterdir()) / "information"
    info.unlink()
    os.mkfifo(info)  # a FIFO with no writer would block a plain open(): refused unread
    kd = read_kernel_driver(str(root / "proc"), str(root / "dev"))
    assert kd.version == "580.159.04" and kd.gpus == ()
    assert "not a regular file" in kd.error


def test_kernel_driver_facts_round_trip(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    facts = dataclasses.replace(
        no_driver_node(), kernel_driver=read_kernel_driver(str(root / "proc"), str(root / "dev"))
    )
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(facts)))) == facts


def gap_node(state: str, error: str, gpus: int = 1) -> object:
    """A machine whose driver lists `gpus` H100s and whose NVML facts are missing for `state`."""
    kd = KernelDriver(
        version="580.159.04",
        gpus=tuple(ProcGpu(f"0000:{i:02x}:00.0", MODEL, minor=i) for i in range(gpus)),
        device_nodes=tuple(f"/dev/nvidia{i}" for i in range(gpus)),
        control_node=True,
    )
    return no_driver_node(kernel_driver=kd, nvml_state=state, nvml_error=error)


def _by_check(results: list) -> dict:
    out: dict = {}
    for r in results:
        out.setdefault(r.check, []).append(r)
    return out


@pytest.mark.parametrize(
    ("state", "error", "named", "fix"),
    [
        (NVML_NO_MODULE, "pynvml is not importable (ModuleNotFoundError: No module named "
         "'pynvml')", "the pynvml module (nvidia-ml-py) is not importable",
         "pip install 'cluster-envcheck[gpu]'"),
        (NVML_NO_LIBRARY, "NVML did not start: libnvidia-ml.so.1 ... (NVML Shared Library Not "
         "Found)", "libnvidia-ml.so.1", "ldconfig -p | grep libnvidia-ml"),
        (NVML_MISMATCH, "NVML did not start: ... (RM has detected an NVML/RM version mismatch.)",
         "not the version of the loaded kernel module 580.159.04", "reboot the node"),
    ],
)
def test_every_gpu_check_fails_naming_the_missing_part(
    state: str, error: str, named: str, fix: str
) -> None:
    results = _by_check(run_node_checks(gap_node(state, error, 8), Expectations(), "n",
                                        plugins=False))
    for check in GPU_CHECKS:
        assert [r.status for r in results[check]] == [Status.FAIL], check
        assert fix in results[check][0].fix, check
    driver = results["driver"][0].message
    assert "driver 580.159.04 is loaded with 8 GPU(s) (8x NVIDIA H100 80GB HBM3" in driver
    assert named in driver and error in driver
    assert "8 GPU(s) in /proc/driver/nvidia/gpus" in results["gpus"][0].message


def test_gpus_check_judges_expectations_against_the_driver_list() -> None:
    facts = gap_node(NVML_NO_MODULE, "pynvml is not importable", 1)
    [r] = BUILTIN_CHECKS["gpus"](facts, Expectations(expect_gpus=8, expect_gpu_model="A100"))
    assert r.status is Status.FAIL
    assert "expected 8 GPUs, the driver lists 1" in r.message
    assert "expected model 'A100', found 0000:00:00.0 NVIDIA H100 80GB HBM3" in r.message


def test_missing_device_node_is_named() -> None:
    facts = gap_node(NVML_NO_MODULE, "pynvml is not importable", 2)
    kd = dataclasses.replace(facts.kernel_driver, device_nodes=("/dev/nvidia0",))
    [r] = BUILTIN_CHECKS["driver"](dataclasses.replace(facts, kernel_driver=kd), Expectations())
    assert "1 /dev/nvidiaN node(s), none for minor 1" in r.message


def test_machine_without_driver_still_skips() -> None:
    results = _by_check(run_node_checks(no_driver_node(nvml_state=NVML_NO_LIBRARY),
                                        Expectations(), "n", plugins=False))
    for check in GPU_CHECKS:
        assert {r.status for r in results[check]} == {Status.SKIP}, check


BLOCKED_PYNVML = (
    "raise ModuleNotFoundError(\"No module named 'pynvml'\", name='pynvml')\n"
)


def _verify_node(tmp_path: Path, root: Path, *argv: str, block_pynvml: bool) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["ENVCHECK_NVIDIA_ROOT"] = str(root)
    env["ENVCHECK_CACHE_DIR"] = str(tmp_path / "cache")  # the arch probe's answers
    env["PYTHONPATH"] = str(REPO)
    if block_pynvml:  # this environment has nvidia-ml-py: a module on the path shadows it
        blocked = tmp_path / "blocked"
        blocked.mkdir(exist_ok=True)
        (blocked / "pynvml.py").write_text(BLOCKED_PYNVML)
        env["PYTHONPATH"] = f"{blocked}{os.pathsep}{REPO}"
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--no-plugins", "--quiet",
         "--json", str(out), *argv],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.skipif(HAS_NVML_GPU, reason="NVML must be unusable here (tests/gpu covers a GPU)")
def test_verify_node_without_pynvml_fails_with_the_fix(tmp_path: Path) -> None:
    rc, report = _verify_node(tmp_path, make_root(tmp_path), block_pynvml=True)
    assert rc == 2
    results = {}
    for r in report["results"]:
        results.setdefault(r["check"], []).append(r)
    for check in GPU_CHECKS:
        assert [r["status"] for r in results[check]] == ["fail"], (check, results[check])
        assert "pip install 'cluster-envcheck[gpu]'" in results[check][0]["fix"]
    driver = results["driver"][0]["message"]
    assert "NVIDIA driver 580.159.04 is loaded with 1 GPU(s) (1x NVIDIA H100 80GB HBM3" in driver
    assert "No module named 'pynvml'" in driver


@pytest.mark.slow
@pytest.mark.skipif(HAS_NVML_GPU, reason="NVML must be unusable here (tests/gpu covers a GPU)")
def test_verify_node_with_pynvml_but_no_libnvidia_ml(tmp_path: Path) -> None:
    # the real nvidia-ml-py of this environment, on a machine without libnvidia-ml.so.1
    rc, report = _verify_node(tmp_path, make_root(tmp_path), "--expect-gpus", "1",
                              block_pynvml=False)
    assert rc == 2
    [driver] = [r for r in report["results"] if r["check"] == "driver"]
    assert driver["status"] == "fail"
    assert "pynvml imports but libnvidia-ml.so.1" in driver["message"]
    assert "NVML Shared Library Not Found" in driver["message"]
    assert "libnvidia-compute" in driver["fix"]


def test_table_keeps_brackets_of_quoted_commands() -> None:
    from rich.console import Console

    from envcheck.report import Report, Result, render_table

    console = Console(record=True, width=300)
    fix = "pip install 'cluster-envcheck[gpu]'"
    render_table(Report("verify node", (Result("driver", Status.FAIL, "[red]x", fix=fix),)),
                 console)
    text = console.export_text()
    assert fix in text and "[red]x" in text


def test_expected_gpus_without_pynvml_name_nvidia_ml_py_not_the_driver() -> None:
    facts = no_driver_node(nvml_state=NVML_NO_MODULE,
                           nvml_error="NVML did not start: No module named 'pynvml'")
    exp = Expectations(expect_gpus=1)
    for check in ("driver", "gpus"):
        [r] = BUILTIN_CHECKS[check](facts, exp)
        assert r.status is Status.FAIL
        assert r.fix.startswith("pip install nvidia-ml-py"), r.fix
        assert "install the NVIDIA driver" not in r.fix
    library = no_driver_node(nvml_state=NVML_NO_LIBRARY)
    [r] = BUILTIN_CHECKS["driver"](library, exp)
    assert "NVIDIA driver" in r.fix and "nvidia-ml-py" not in r.fix


def test_level_2_without_a_gpu_warns_naming_why_and_the_fix() -> None:
    from envcheck.verify.node.load import run_load

    facts = no_driver_node(nvml_state=NVML_NO_MODULE,
                           nvml_error="NVML did not start: No module named 'pynvml'")
    _, [r], measurements = run_load(facts, 0.1)
    assert r.status is Status.WARN and "level 2 load not run: no GPU" in r.message
    assert "No module named 'pynvml'" in r.message and "nvidia-ml-py" in r.fix
    assert measurements == []
