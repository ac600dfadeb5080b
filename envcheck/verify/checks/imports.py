"""Key modules import in a fresh interpreter (a missing libopenblas shows up here, not later)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

CHECK = "imports"


def _fix(error: str) -> str:
    if "shared object" in error or ".so" in error:
        return (
            "a shared library is missing or incompatible: install the package that ships it "
            "(conda install / OS package), or fix LD_LIBRARY_PATH"
        )
    if error.startswith("ModuleNotFoundError"):
        return "install the package into this environment (recreate it from the lock)"
    if "timed out" in error:
        return "the import hangs: check for a stuck GPU, a network filesystem, or a lock file"
    if "crashed" in error:
        return "the import kills the interpreter: mismatched binary packages; recreate the env"
    return "run `python -c 'import MODULE'` in this environment to see the full error"


def check_imports(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Every key module of the lock and every --import MODULE imports in a child process."""
    if not exp.import_modules:
        return [Result(CHECK, Status.SKIP, "no module to import (--import, or a --lock)")]
    probes = {p.module: p for p in facts.imports}
    results, ok = [], []
    for module in exp.import_modules:
        p = probes.get(module)
        if p is None:
            results.append(
                Result(
                    CHECK,
                    Status.ERROR,
                    f"{module} was not probed: facts were collected without it",
                    fix="collect facts with import_modules including it",
                )
            )
        elif p.ok:
            ok.append(f"{module} ({p.seconds:.2f} s)")
        else:
            results.append(
                Result(CHECK, Status.FAIL, f"import {module} failed: {p.error}", fix=_fix(p.error))
            )
    if ok:
        results.insert(0, Result(CHECK, Status.PASS, "imported: " + ", ".join(ok)))
    return results
