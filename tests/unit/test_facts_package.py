"""The facts package as it ships: standard library only, and loaded by value (the payload and
its loader, verify/shipping.py) where envcheck is not installed, Python 3.8 included."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import envcheck.verify.facts as facts_package
from envcheck.verify.shipping import (
    PREFIX,
    facts_payload,
    facts_sources,
    load_facts,
    standalone_source,
)
from tests.support.old_envs import find_python

PACKAGE = Path(facts_package.__file__).parent


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(top-level module or "." for a relative import, line, inside a function) of each import."""
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                out.extend((a.name.split(".")[0], child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                name = "." if child.level else (child.module or "").split(".")[0]
                out.append((name, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return out


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names is 3.10+")
def test_every_module_imports_only_the_standard_library_and_the_package() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert {p.stem for p in modules} >= {"__init__", "model", "collect", "nvml", "host"}
    wrong = []
    for path in modules:
        for name, line, in_function in _imports(ast.parse(path.read_text())):
            if name == "." or name in sys.stdlib_module_names or name == "__future__":
                continue
            if name == "pynvml" and in_function:  # NVML's bindings: lazily, where asked
                continue
            wrong.append(f"{path.name}:{line} imports {name}")
    assert wrong == []


def test_the_payload_holds_every_module_but_the_entry_point_under_one_digest() -> None:
    sources = facts_sources()
    assert set(sources) == {p.stem for p in PACKAGE.glob("*.py")} - {"__main__"}
    assert sources["model"] == (PACKAGE / "model.py").read_text()
    payload = facts_payload()
    assert payload is facts_payload() and len(payload.digest) == 16


def test_loaded_package_is_named_for_its_digest_and_keeps_its_state() -> None:
    payload = facts_payload()
    name = PREFIX + payload.digest
    saved = {k: v for k, v in sys.modules.items() if k == name or k.startswith(name + ".")}
    meta_path = list(sys.meta_path)
    try:
        for key in saved:
            del sys.modules[key]
        assert load_facts(payload.digest, b"") is None  # asked by digest alone
        package = load_facts(payload.digest, payload.source)
        assert package.__name__ == name and sys.meta_path == meta_path  # no finder left
        assert package.model.NodeFacts is package.NodeFacts
        assert package.NodeFacts is not facts_package.NodeFacts  # its own copy
        facts = package.collect_node_facts(role="worker", address="tcp://127.0.0.1:1")
        assert facts.role == "worker" and type(facts).__module__ == name + ".model"
        # the per-process caches live in the loaded package and stay for the next call
        assert "address-link" in package.caches._CACHE
        assert package.caches._CACHE is not facts_package.caches._CACHE
        assert load_facts(payload.digest, b"") is package
        assert load_facts(payload.digest, payload.source) is package
        sent = json.loads(json.dumps(package.facts_to_dict(facts)))
        back = facts_package.facts_to_dict(facts_package.facts_from_dict(sent))
        assert json.loads(json.dumps(back)) == sent
    finally:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
        sys.modules.update(saved)


def test_a_failing_module_leaves_nothing_half_loaded(tmp_path: Path) -> None:
    import zlib

    sources = {"__init__": "from . import broken\n", "broken": "raise RuntimeError('no')\n"}
    blob = zlib.compress(json.dumps(sources).encode())
    with pytest.raises(RuntimeError, match="no"):
        load_facts("test-broken", blob)
    assert not [k for k in sys.modules if k.startswith(PREFIX + "test-broken")]


def test_the_payload_loader_runs_the_collector_on_python_3_8(tmp_path: Path) -> None:
    """The same loader as workers and --prefix interpreters, on the oldest Python supported."""
    python = find_python("3.8")
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    (tmp_path / "facts_standalone.py").write_text(standalone_source())
    code = (
        "import json, sys\n"
        "import facts_standalone as s\n"
        "m = s.load_facts(s.DIGEST, s.PAYLOAD)\n"
        "assert s.load_facts(s.DIGEST, b'') is m and 'envcheck' not in sys.modules\n"
        "f = m.collect_node_facts(role='worker', address='tcp://127.0.0.1:1')\n"
        "print(json.dumps({'name': m.__name__, 'python': f.python, 'role': f.role,\n"
        "                  'kept': sorted(m.caches._CACHE)}))\n"
    )
    proc = subprocess.run(
        [python, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n" + code],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["name"] == PREFIX + facts_payload().digest
    assert out["python"].startswith("3.8.") and out["role"] == "worker"
    assert "address-link" in out["kept"]


def test_a_load_while_another_thread_imports_does_not_trip_over_sys_modules() -> None:
    # An in-process scheduler (dask-jobqueue, LocalCluster) loads the package on its event
    # loop while the client's threads import modules: sys.modules changes under the loader.
    import threading
    import types
    import zlib

    blob = zlib.compress(json.dumps({"__init__": "VALUE = 1\n"}).encode())
    stop = threading.Event()

    def churn() -> None:
        module = types.ModuleType("_envcheck_test_churn")
        while not stop.is_set():
            for i in range(50):
                sys.modules[f"_envcheck_test_churn_{i}"] = module
            for i in range(50):
                sys.modules.pop(f"_envcheck_test_churn_{i}", None)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    names = [f"test-churn-{i}" for i in range(300)]
    try:
        for digest in names:
            assert load_facts(digest, blob).VALUE == 1
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        for digest in names:
            sys.modules.pop(PREFIX + digest, None)


def test_a_process_of_the_same_python_runs_the_shipped_code_and_compiles_nothing() -> None:
    """The payload carries the modules compiled by this interpreter: a worker of the same
    Python loads them without compiling; one of another (its magic differs) compiles the
    sources, which the payload still holds."""
    import zlib

    payload = facts_payload()
    assert payload.digest == facts_payload(compiled=False).digest
    other = json.loads(zlib.decompress(payload.source))
    other["__compiled__"]["magic"] = "00000000"
    code = (
        "import builtins, json, sys, zlib\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from envcheck.verify.shipping import facts_payload, load_facts\n"
        "blob = facts_payload().source if sys.argv[2] == 'same' else zlib.compress(\n"
        "    sys.stdin.buffer.read())\n"
        "compiled = []  # from here on: the far side's loading\n"
        "real = builtins.compile\n"
        "builtins.compile = lambda *a, **k: compiled.append(a[1]) or real(*a, **k)\n"
        "m = load_facts('test-compiled-' + sys.argv[2], blob)\n"
        "m.collect_node_facts(role='worker', address='tcp://127.0.0.1:1')\n"
        "print(len(compiled))\n"
    )
    counts = {}
    for which in ("same", "other"):
        proc = subprocess.run(
            [sys.executable, "-I", "-c", code, str(PACKAGE.parents[2]), which],
            input=json.dumps(other).encode(), capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        counts[which] = int(proc.stdout.decode().split()[-1])
    assert counts["same"] == 0
    assert counts["other"] == len(facts_sources())
