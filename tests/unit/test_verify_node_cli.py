"""`envcheck verify node` end to end: real collection here, saved facts for other machines."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.verify.facts import collect_node_facts, facts_to_dict
from tests.support.factories import healthy_a100x8, with_env, with_libraries, with_process

EXCERPT = Path(__file__).parents[1] / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"
HAS_GPU = bool(collect_node_facts().gpus)
needs_no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the no-driver path")


def _run(argv: list[str], tmp_path: Path) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    rc = main(["verify", "node", "--quiet", "--json", str(out), *argv])
    return rc, json.loads(out.read_text()) if out.exists() else {}


def _by_check(report: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in report["results"]:
        out.setdefault(r["check"], []).append(r)
    return out


def _facts_file(tmp_path: Path, facts) -> str:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts_to_dict(facts)))
    return str(path)


@needs_no_gpu
def test_no_driver_no_expectations_passes_and_says_gpu_checks_are_skipped(tmp_path):
    rc, report = _run([], tmp_path)
    assert rc == 0 and report["status"] == "pass"
    assert report["schema"] == "envcheck.report/1"
    [driver] = _by_check(report)["driver"]
    assert driver["status"] == "skip" and driver["message"].startswith("no GPU: ")
    assert set(report["results"][0]) >= {"check", "status", "node", "message", "fix"}
    assert report["measurements"][0]["name"] == "collect_node_facts"


@needs_no_gpu
def test_no_driver_with_expected_gpus_fails_clearly(tmp_path, capsys):
    rc, report = _run(["--expect-gpus", "2"], tmp_path)
    assert rc == 2 and report["status"] == "fail"
    [gpus] = _by_check(report)["gpus"]
    assert gpus["status"] == "fail" and "expected 2 GPU(s) but NVML sees none" in gpus["message"]
    assert "FAIL" in capsys.readouterr().out


def test_saved_facts_of_a_healthy_a100x8_pass_and_junit_has_one_case_per_result(tmp_path):
    junit = tmp_path / "r.xml"
    argv = ["--facts", _facts_file(tmp_path, healthy_a100x8()), "--junit", str(junit)]
    argv += ["--expect-gpus", "8", "--expect-gpu-model", "A100", "--min-gpu-memory", "80GiB"]
    rc, report = _run([*argv, "--expect-ucx", "--cuda", "12.2", "--no-plugins"], tmp_path)
    failing = [r for r in report["results"] if r["status"] not in ("pass", "skip")]
    # --cuda implies libcuda must load; saved facts were collected without that probe
    assert [r["check"] for r in failing] == ["libraries"] and failing[0]["status"] == "error"
    assert rc == 3
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert len(cases) == len(report["results"])


def test_foreign_process_fails_and_allow_busy_gpus_warns(tmp_path):
    busy = _facts_file(tmp_path, with_process(healthy_a100x8(), 3, 31337, "bob", 30000))
    rc, report = _run(["--facts", busy, "--no-plugins"], tmp_path)
    assert rc == 2
    [r] = _by_check(report)["busy-gpus"]
    assert "pid 31337" in r["message"] and "user bob" in r["message"]
    rc, report = _run(["--facts", busy, "--no-plugins", "--allow-busy-gpus"], tmp_path)
    assert rc == 1 and report["status"] == "warn"


def test_duplicate_cuda_visible_devices_fails(tmp_path):
    facts = with_env(healthy_a100x8(), CUDA_VISIBLE_DEVICES="0,0")
    # --expect-gpus makes libcuda expected: saved facts carry that probe too
    facts = with_libraries(facts, **{"libcuda.so.1": "/usr/lib64/libcuda.so.1"})
    rc, report = _run(["--facts", _facts_file(tmp_path, facts), "--expect-gpus", "8"], tmp_path)
    assert rc == 2
    checks = _by_check(report)
    assert checks["cuda-visible-devices"][0]["status"] == "fail"
    assert "a job sees 0" in checks["gpus"][0]["message"]


def test_module_that_fails_to_import_fails_the_run(tmp_path, monkeypatch):
    (tmp_path / "broken_blas_user.py").write_text(
        "raise ImportError('libopenblas.so.0: cannot open shared object file')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    rc, report = _run(["--import", "json", "--import", "broken_blas_user"], tmp_path)
    imports = _by_check(report)["imports"]
    assert [r["status"] for r in imports] == ["pass", "fail"]
    assert "libopenblas.so.0" in imports[1]["message"]
    assert rc == 2


def test_comma_lists_in_import_and_library_name_each_one(tmp_path):
    """`--import tensorflow,dlib` is two modules, as `import: tensorflow,dlib` in an --expect
    file and imports="tensorflow,dlib" in the API are (no module name holds a comma)."""
    rc, report = _run(["--import", "json,envcheck_no_such_module", "--import", "json",
                       "--library", "libc.so.6,libenvcheck-none.so.9"], tmp_path)
    by = _by_check(report)
    imports = sorted((r["status"], r["message"]) for r in by["imports"])
    assert [s for s, _ in imports] == ["fail", "pass"], imports
    assert "envcheck_no_such_module" in imports[0][1] and "," not in imports[0][1]
    libraries = {r["status"] for r in by["libraries"]}
    assert "fail" in libraries and "pass" in libraries, by["libraries"]
    assert rc == 2


def _pip_lock(path: Path, packages: dict[str, str]) -> Path:
    """A conda-lock v1 file with pip entries (the shape conda-lock writes for pip deps)."""
    entries = "".join(
        f"""- name: {name}
  version: '{version}'
  manager: pip
  platform: linux-64
  dependencies: {{}}
  url: https://files.pythonhosted.org/packages/{name}-{version}-py3-none-any.whl
  hash:
    sha256: '{"0" * 64}'
  category: main
  optional: false
"""
        for name, version in packages.items()
    )
    path.write_text(
        "version: 1\nmetadata:\n  content_hash:\n    linux-64: x\n  channels: []\n"
        "  platforms:\n  - linux-64\n  sources: []\npackage:\n" + entries
    )
    return path


@pytest.mark.skipif(sys.platform != "linux", reason="the lock is for linux-64")
def test_pip_lock_matches_this_venv_and_drift_is_named(tmp_path):
    have = {"pytest": pytest.__version__, "rich": importlib.metadata.version("rich")}
    rc, report = _run(["--lock", str(_pip_lock(tmp_path / "ok.yml", have))], tmp_path)
    [packages] = _by_check(report)["packages"]
    assert packages["status"] == "pass", packages["message"]
    drift = {**have, "rich": "1.0.0", "not-installed-pkg": "2.0"}
    rc, report = _run(["--lock", str(_pip_lock(tmp_path / "bad.yml", drift))], tmp_path)
    [packages] = _by_check(report)["packages"]
    assert rc == 2 and packages["status"] == "fail"
    assert f"rich {have['rich']} (lock 1.0.0)" in packages["message"]
    assert "missing 1: not-installed-pkg 2.0" in packages["message"]


@pytest.mark.slow
def test_conda_lock_in_a_venv_fails_the_packages_check(tmp_path):
    rc, report = _run(["--lock", str(EXCERPT), "--no-plugins"], tmp_path)
    [packages] = _by_check(report)["packages"]
    assert packages["status"] == "fail" and "not in a conda environment" in packages["message"]
    assert _by_check(report)["glibc"][0]["message"].endswith(">= 2.17")
    assert rc == 2


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--lock", "no/such/file.yml"], "lock file no/such/file.yml does not exist"),
        (["--lock", "{bad}"], "not a readable conda-lock file"),
        (["--facts", "{bad}"], "junk.txt: not JSON"),
        (["--min-gpu-memory", "lots"], "--min-gpu-memory must be a size"),
        (["--expect-gpus", "-1"], "--expect-gpus must be an integer >= 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(argv, says, tmp_path, capsys):
    argv = [str(tmp_path / "junk.txt") if a == "{bad}" else a for a in argv]
    (tmp_path / "junk.txt").write_text("this: [is not\n")
    try:
        rc = main(["verify", "node", *argv])
    except SystemExit as e:  # argparse's own errors leave through SystemExit(4)
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 4
    assert says in err and "Traceback" not in err


def test_saved_facts_judge_the_same_elsewhere(tmp_path):
    saved = tmp_path / "node1.json"
    argv = ["--import", "json", "--library", "m", "--min-glibc", "2.17", "--no-plugins"]
    rc1, first = _run([*argv, "--save-facts", str(saved)], tmp_path)
    rc2, second = _run([*argv, "--facts", str(saved)], tmp_path)
    assert rc1 == rc2 == 0
    # the same verdicts; how long each check took is the run's own
    def verdicts(report: dict) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in report["results"]]

    assert verdicts(first) == verdicts(second)
    assert json.loads(saved.read_text())["python_executable"] == sys.executable
