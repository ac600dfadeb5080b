"""Import and shared-library probes judged; the probes themselves run in test_facts.py."""

from __future__ import annotations

from envcheck.report import Status
from envcheck.verify.node.checks.env.imports import check_imports
from envcheck.verify.node.checks.env.libraries import check_libraries
from tests.support.factories import expect, healthy_a100x8, with_imports, with_libraries

OPENBLAS = (
    "ImportError: libopenblas.so.0: cannot open shared object file: No such file or directory"
)


def test_module_that_fails_to_import_is_named_with_its_error_and_a_library_fix():
    facts = with_imports(healthy_a100x8(), numpy="", scipy=OPENBLAS)
    results = check_imports(facts, expect(import_modules=("numpy", "scipy")))
    assert [r.status for r in results] == [Status.PASS, Status.FAIL]
    assert "numpy" in results[0].message
    assert results[1].message == f"import scipy failed: {OPENBLAS}"
    assert "shared library" in results[1].fix


def test_missing_module_and_timeout_get_their_own_fix():
    facts = with_imports(
        healthy_a100x8(),
        cudf="ModuleNotFoundError: No module named 'cudf'",
        cuml="timed out after 60 s",
    )
    fails = check_imports(facts, expect(import_modules=("cudf", "cuml")))
    assert "install the package" in fails[0].fix and "hangs" in fails[1].fix


def test_module_expected_but_not_probed_is_an_error_not_a_pass():
    facts = with_imports(healthy_a100x8(), numpy="")
    results = check_imports(facts, expect(import_modules=("numpy", "torch", "cupy")))
    assert [r.status for r in results] == [Status.PASS, Status.ERROR]
    assert results[1].message == "not probed: torch, cupy (facts were collected without them)"
    assert "--save-facts" in results[1].fix
    [r] = check_libraries(healthy_a100x8(), expect(libraries=("libcuda.so.1",)))
    assert r.status is Status.ERROR and "not probed: libcuda.so.1" in r.message


def test_libraries_found_and_missing():
    facts = with_libraries(
        healthy_a100x8(), **{"libcuda.so.1": "/usr/lib64/libcuda.so.1", "libopenblas.so.0": ""}
    )
    results = check_libraries(facts, expect(libraries=("libcuda.so.1", "libopenblas.so.0")))
    assert [r.status for r in results] == [Status.PASS, Status.FAIL]
    assert "/usr/lib64/libcuda.so.1" in results[0].message
    assert "libopenblas.so.0 does not load" in results[1].message


def test_nothing_to_probe_skips():
    assert check_imports(healthy_a100x8(), expect())[0].status is Status.SKIP
    assert check_libraries(healthy_a100x8(), expect())[0].status is Status.SKIP
