"""The collector, run for real: on this machine, in a plain venv, and its child-process probes."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.verify.facts import (
    caches,
    collect_node_facts,
    decode_nccl_version,
    facts_from_dict,
    facts_to_dict,
    normalize_name,
    nvml,
    parse_ucx_info,
    probe_imports,
    probe_libraries,
)
from envcheck.verify.facts import packages as packages_mod
from envcheck.verify.facts import ucx as ucx_mod
from envcheck.verify.shipping import facts_payload, load_facts, standalone_source
from tests.support.deadlines import HANG
from tests.support.factories import healthy_a100x8, with_imports, with_libraries, with_process


def test_collector_on_this_machine_reports_host_python_and_packages():
    f = collect_node_facts(role="worker", address="tcp://10.0.0.1:1234")
    assert (f.host, f.pid, f.role, f.address) == (
        socket.gethostname(),
        os.getpid(),
        "worker",
        "tcp://10.0.0.1:1234",
    )
    assert f.python == ".".join(map(str, sys.version_info[:3]))
    assert f.packages["pytest"] == pytest.__version__
    assert f.collect_seconds > 0
    if f.gpus:  # on the device machine
        assert f.nvml_error == "" and f.driver_version and f.cuda_driver_version
    else:  # CI: no driver, a reason instead of a crash
        assert f.nvml_error and f.driver_version == "" and f.visible_gpu_uuids == ()


def test_dist_info_scan_finds_the_same_distributions_as_importlib_metadata():
    f = collect_node_facts()
    expected = {}
    for d in importlib.metadata.distributions():
        expected.setdefault(normalize_name(d.metadata["Name"]), d.version)
    assert f.python_packages == expected


def test_env_records_gpu_and_comm_variables_and_extra_names(monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp,cuda_copy")
    monkeypatch.setenv("MY_SITE_VAR", "x")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,0")
    f = collect_node_facts(extra_env=("MY_SITE_VAR",))
    assert f.env["UCX_TLS"] == "tcp,cuda_copy" and f.env["MY_SITE_VAR"] == "x"
    assert f.env["CUDA_VISIBLE_DEVICES"] == "0,0"
    assert f.visible_gpu_uuids == ()
    if f.gpus:
        assert "already listed" in f.visible_devices_problem


def test_facts_survive_dict_and_json_round_trips():
    f = collect_node_facts(import_modules=("json",), libraries=("m",))
    assert facts_from_dict(facts_to_dict(f)) == f
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(f)))) == f
    rich = with_libraries(
        with_imports(with_process(healthy_a100x8(), 3, 31337, "bob", 30000), numpy="", scipy="x"),
        nccl="/opt/libnccl.so.2",
    )
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(rich)))) == rich
    # a newer collector's extra field does not break an older reader
    assert facts_from_dict({**facts_to_dict(rich), "future_field": 1}) == rich


def test_conda_meta_file_names_give_versions_and_builds(tmp_path):
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    # file names as conda writes them, from a real RAPIDS 22.12 `conda list` (see factories.py)
    for name in (
        "python-3.9.13-h9a8a25e_0_cpython",
        "cuda-python-11.7.1-py39h3fd9d12_0",
        "libgcc-ng-12.2.0-h65d4601_19",
        "_libgcc_mutex-0.1-conda_forge",
        "ucx-1.13.1-h538f049_1",
    ):
        (meta / f"{name}.json").write_text("{}")
    (meta / "history").write_text("")
    versions, builds = packages_mod._conda_meta_packages(tmp_path)
    assert builds["_libgcc_mutex"] == "conda_forge" and versions.pop("_libgcc_mutex") == "0.1"
    assert versions == {
        "cuda-python": "11.7.1",
        "libgcc-ng": "12.2.0",
        "python": "3.9.13",
        "ucx": "1.13.1",
    }
    assert builds["python"] == "h9a8a25e_0_cpython" and builds["cuda-python"] == "py39h3fd9d12_0"
    assert packages_mod._conda_meta_packages(tmp_path / "nope") is None


@pytest.mark.slow
def test_probe_imports_reports_failure_hang_and_crash_and_goes_on(tmp_path, monkeypatch):
    (tmp_path / "good_mod.py").write_text("VALUE = 1\n")
    (tmp_path / "needs_blas.py").write_text(
        "raise ImportError('libopenblas.so.0: cannot open shared object file: No such file')\n"
    )
    (tmp_path / "hangs_mod.py").write_text("import time\ntime.sleep(600)\n")
    (tmp_path / "crashes_mod.py").write_text("import os\nos.abort()\n")
    (tmp_path / "chatty_mod.py").write_text("print('hello from import')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    t0 = time.perf_counter()
    probes = probe_imports(
        ["good_mod", "needs_blas", "hangs_mod", "crashes_mod", "chatty_mod", "good_mod"], 2.0
    )
    assert time.perf_counter() - t0 < HANG  # not the hung import's 600 s
    by = {p.module: p for p in probes}
    assert [p.module for p in probes] == [
        "good_mod",
        "needs_blas",
        "hangs_mod",
        "crashes_mod",
        "chatty_mod",
    ]
    assert by["good_mod"].ok and by["chatty_mod"].ok
    assert not by["needs_blas"].ok and "libopenblas.so.0" in by["needs_blas"].error
    assert by["hangs_mod"].error == "timed out after 2 s"
    assert by["crashes_mod"].error == "import crashed the interpreter (signal 6)"


def test_probe_libraries_resolves_through_the_loader():
    found, missing = probe_libraries(["m", "libenvcheck_no_such_lib.so.7"], 30)
    assert found.found and "libm" in Path(found.path).name
    assert not missing.found and "libenvcheck_no_such_lib.so.7" in missing.error


# `ucx_info -v -d` output shape, from openucx/ucx src/tools/info (version_info.c, tl_info.c)
UCX_INFO = """\
# Library version: 1.15.0
# Library path: /opt/conda/lib/libucs.so.0
# API headers version: 1.15.0
#
# Memory domain: self
#     Component: self
#      Transport: self
#         Device: memory
#
# Memory domain: cuda_cpy
#     Component: cuda_cpy
#      Transport: cuda_copy
#         Device: cuda
#
# Memory domain: cuda_ipc
#      Transport: cuda_ipc
#         Device: cuda
#      Transport: tcp
#         Device: eth0
#      Transport: tcp
#         Device: lo
"""


def test_parse_ucx_info():
    assert parse_ucx_info(UCX_INFO) == (("cuda_copy", "cuda_ipc", "self", "tcp"), "1.15.0")
    assert parse_ucx_info("") == ((), "")


def test_ucx_binding_and_ucx_info_on_path_are_found(tmp_path, monkeypatch):
    # This machine has no UCX: a stand-in ucxx package and ucx_info exercise the real lookup
    # (find_spec, PATH, subprocess with timeout, parsing).
    (tmp_path / "ucxx").mkdir()
    (tmp_path / "ucxx" / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    tool = tmp_path / "bin" / "ucx_info"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{UCX_INFO}EOF\n")
    tool.chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    f = collect_node_facts()
    assert f.ucx.module == "ucxx" and f.ucx.ucx_version == "1.15.0"
    assert f.ucx.transports == ("cuda_copy", "cuda_ipc", "self", "tcp") and f.ucx.error == ""
    tool.write_text("#!/bin/sh\nsleep 30\n")
    hung = ucx_mod._ucx_facts({}, {}, timeout=0.5)
    assert "timed out" in hung.error


def test_ucx_info_of_a_libucx_wheel_installed_with_pip_target_is_found(tmp_path, monkeypatch):
    # `pip install --target DIR` + PYTHONPATH=DIR (how the GPU machine got its wheels) is an
    # import root that does not end in site-packages; its libucx/bin/ucx_info must still be used,
    # with libucx/lib on LD_LIBRARY_PATH (the wheel's binary has no rpath to it).
    (tmp_path / "ucxx").mkdir()
    (tmp_path / "ucxx" / "__init__.py").write_text("")
    tool = tmp_path / "libucx" / "bin" / "ucx_info"
    tool.parent.mkdir(parents=True)
    tool.write_text(
        f'#!/bin/sh\ncase "$LD_LIBRARY_PATH" in *libucx/lib*) ;; *) exit 3;; esac\n'
        f"cat <<'EOF'\n{UCX_INFO}EOF\n"
    )
    tool.chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    if shutil.which("ucx_info"):
        pytest.skip("a ucx_info on PATH takes precedence over the wheel's")
    ucx = ucx_mod._ucx_facts({}, {}, timeout=10)
    assert ucx.error == ""
    assert ucx.transports == ("cuda_copy", "cuda_ipc", "self", "tcp")


@pytest.mark.parametrize(("code", "text"), [(22703, "2.27.3"), (21803, "2.18.3"), (2708, "2.7.8")])
def test_decode_nccl_version(code, text):
    assert decode_nccl_version(code) == text


@pytest.fixture(scope="module")
def plain_venv(tmp_path_factory) -> Path:
    """A fresh venv (pip only, no conda-meta, no envcheck, no pynvml)."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(root / "v")], check=True, timeout=120)
    return root


@pytest.mark.slow
def test_facts_package_runs_standalone_in_a_venv_without_envcheck(plain_venv):
    copy = plain_venv / "facts_standalone.py"  # outside any package: only the stdlib to lean on
    copy.write_text(standalone_source())
    python = plain_venv / "v" / "bin" / "python"
    out = subprocess.run(
        [str(python), "-I", str(copy)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["package_source"] == "importlib.metadata"
    pip_version = subprocess.run(
        [str(python), "-c", "import pip; print(pip.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert data["packages"]["pip"] == pip_version
    assert "envcheck" not in data["packages"] and "pytest" not in data["packages"]
    assert data["python_executable"] == str(python)
    assert data["nvml_error"].startswith("pynvml is not importable")
    assert facts_from_dict(data).gpus == ()


def test_probe_libraries_finds_pip_wheel_libraries_loaded_by_path(tmp_path, monkeypatch):
    # pip's nvidia-nccl-cu12 puts libnccl.so.2 in site-packages/nvidia/nccl/lib, off the
    # loader path; a real ELF library copied to such a place stands in for it
    libm = probe_libraries(["m"], 30)[0].path
    lib_dir = tmp_path / "site-packages" / "nvidia" / "envcheck_test" / "lib"
    lib_dir.mkdir(parents=True)
    shutil.copy(libm, lib_dir / "libenvcheck_test.so.1")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site-packages"))
    [probe] = probe_libraries(["libenvcheck_test.so.1"], 30)
    assert probe.found and probe.path == str(lib_dir / "libenvcheck_test.so.1")


def test_collector_ships_by_value_to_an_interpreter_without_envcheck(tmp_path):
    # what verify cluster does: the loader pickled by value with cloudpickle, the package's
    # sources as the payload; the worker side has cloudpickle (it comes with distributed) but
    # no envcheck
    cloudpickle = pytest.importorskip("cloudpickle")
    payload = facts_payload()
    (tmp_path / "payload.pkl").write_bytes(
        cloudpickle.dumps((load_facts, payload.digest, payload.source))
    )
    site = str(Path(cloudpickle.__file__).parents[1])
    code = (
        "import sys, json, pickle;"
        f"sys.path.append({site!r});"  # cloudpickle's site-packages, without its .pth files
        "load, digest, blob = pickle.loads(open(sys.argv[1], 'rb').read());"
        "assert 'envcheck' not in sys.modules;"
        "import importlib.util; assert importlib.util.find_spec('envcheck') is None;"
        "assert load(digest, b'') is None;"  # asked by digest alone: not loaded yet
        "m = load(digest, blob); assert load(digest, b'') is m;"
        "assert m.__name__ == '_envcheck_facts_' + digest and 'envcheck' not in sys.modules;"
        "print(json.dumps(m.facts_to_dict(m.collect_node_facts(role='worker'))))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code, str(tmp_path / "payload.pkl")],
        cwd=tmp_path,  # not the checkout: envcheck must not be importable
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["role"] == "worker" and data["pid"] != os.getpid()
    assert facts_from_dict(data).host == socket.gethostname()


def _age(path: Path) -> None:
    """Make path's mtime old enough to be cached (past the racy window)."""
    past = time.time() - 5
    os.utime(path, (past, past))


def test_dist_info_scan_is_kept_per_directory_until_the_directory_changes(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "alpha_pkg-1.0.dist-info").mkdir(parents=True)
    _age(site)
    monkeypatch.syspath_prepend(str(site))
    assert collect_node_facts().python_packages["alpha-pkg"] == "1.0"
    real = packages_mod._dists_in
    scanned: list[str] = []
    monkeypatch.setattr(packages_mod, "_dists_in", lambda d: scanned.append(d) or real(d))
    f = collect_node_facts()
    # not listed again (another sys.path directory changed just now may be: not this one)
    assert f.python_packages["alpha-pkg"] == "1.0" and str(site) not in scanned
    f.python_packages["alpha-pkg"] = "mutated by a caller"  # must not reach the cache
    (site / "alpha_pkg-1.0.dist-info").rename(site / "alpha_pkg-2.0.dist-info")  # an upgrade
    f = collect_node_facts()
    assert str(site) in scanned  # the changed directory is listed again
    assert f.python_packages["alpha-pkg"] == "2.0"
    assert f.packages is f.python_packages  # no conda-meta: one dict, sent once


def test_a_directory_changed_just_now_is_not_cached(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "beta-3.1.dist-info").mkdir(parents=True)  # mtime: now (inside the racy window)
    monkeypatch.syspath_prepend(str(site))
    assert caches.dirs_key([str(site)]) is None
    assert collect_node_facts().python_packages["beta"] == "3.1"
    assert f"dist-info:{site}" not in caches._CACHE
    _age(site)
    assert caches.dirs_key([str(site)]) is not None


def test_facts_to_dict_matches_asdict_and_sends_a_shared_dict_once():
    import dataclasses
    import pickle

    rich = with_libraries(
        with_imports(with_process(healthy_a100x8(), 3, 31337, "bob", 30000), numpy=""),
        nccl="/opt/libnccl.so.2",
    )
    assert facts_to_dict(rich) == dataclasses.asdict(rich)
    f = collect_node_facts()
    d = facts_to_dict(f)
    assert d == dataclasses.asdict(f)
    assert d["packages"] is d["python_packages"] and d["packages"] is not f.packages
    assert len(pickle.dumps(d)) < len(pickle.dumps(dataclasses.asdict(f)))


class _FakeNvml:
    """A pynvml stand-in describing two GPUs (hardware description only), counting calls."""

    class NVMLError(Exception):
        pass

    class NVMLError_Uninitialized(NVMLError):  # noqa: N801 - pynvml's name
        pass

    NVML_NVLINK_MAX_LINKS = 2
    NVML_FEATURE_ENABLED = 1

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.used_mib = 100

    def __getattr__(self, name: str):
        answers = {
            "nvmlInit": lambda: None,
            "nvmlDeviceGetCount": lambda: 2,
            "nvmlSystemGetDriverVersion": lambda: b"580.159.04",
            "nvmlSystemGetCudaDriverVersion_v2": lambda: 13000,
            "nvmlDeviceGetHandleByIndex": lambda i: i,
            "nvmlDeviceGetMemoryInfo": lambda h: type(
                "Mem", (), {"total": 141 * 2**30, "used": self.used_mib * 2**20}
            )(),
            "nvmlDeviceGetCudaComputeCapability": lambda h: (9, 0),
            "nvmlDeviceGetNvLinkState": lambda h, link: 1,
            "nvmlDeviceGetCurrPcieLinkGeneration": lambda h: 5,
            "nvmlDeviceGetCurrPcieLinkWidth": lambda h: 16,
            "nvmlDeviceGetUUID": lambda h: f"GPU-{h}",
            "nvmlDeviceGetName": lambda h: "NVIDIA H200",
            "nvmlDeviceGetPciInfo": lambda h: type("Pci", (), {"busId": f"0000:0{h}:00.0"})(),
            "nvmlDeviceGetComputeRunningProcesses": lambda h: [],
            "nvmlDeviceGetGraphicsRunningProcesses": lambda h: [],
        }
        if name not in answers:
            raise AttributeError(name)

        def counted(*args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return answers[name](*args)

        return counted


def test_nvml_identity_is_read_once_memory_and_links_every_time(monkeypatch):
    nv = _FakeNvml()
    monkeypatch.setitem(caches._CACHE, "pynvml", None)  # not the real import's outcome
    monkeypatch.setattr(nvml, "_NVML_STATIC", {})
    monkeypatch.setattr(nvml, "_try_pynvml", lambda: nv)
    # health=False: the health reads (their own NVLink and PCIe reads) would change the counts
    first = collect_node_facts(health=False)
    nv.used_mib = 5000  # a job started on the GPUs between two rounds
    second = collect_node_facts(health=False)
    assert [g.uuid for g in second.gpus] == ["GPU-0", "GPU-1"] and second.driver_version
    assert [g.memory_used_mib for g in first.gpus] == [100, 100]
    assert [g.memory_used_mib for g in second.gpus] == [5000, 5000]  # fresh, not kept
    for static in ("nvmlDeviceGetUUID", "nvmlDeviceGetName", "nvmlDeviceGetPciInfo",
                   "nvmlSystemGetDriverVersion"):
        assert nv.calls[static] == (1 if static.startswith("nvmlSystem") else 2), static
    for live in ("nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses",
                 "nvmlDeviceGetCurrPcieLinkGeneration"):
        assert nv.calls[live] == 4, live  # 2 GPUs x 2 rounds
    assert nv.calls["nvmlDeviceGetNvLinkState"] == 8  # 2 links x 2 GPUs x 2 rounds
