"""Key modules import in a fresh interpreter (a missing libopenblas shows up here, not later)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

CHECK = "imports"
NOT_PROBED_FIX = (
    "collect the facts with the same expectations (envcheck verify node --lock/--import/"
    "--library ... --save-facts FILE), or pass the probes to collect_node_facts"
)


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
    unprobed = [m for m in exp.import_modules if m not in probes]
    if unprobed:
        results.append(
            Result(
                CHECK,
                Status.ERROR,
                f"not probed: {', '.join(unprobed)} (facts were collected without them)",
                fix=NOT_PROBED_FIX,
            )
        )
    for module in exp.import_modules:
        p = probes.get(module)
        if p is None:
            continue
        if p.ok:
            ok.append(f"{module} ({p.seconds:.2f} s)")
        else:
            results.append(
                Result(CHECK, Status.FAIL, f"import {module} failed: {p.error}", fix=_fix(p.error))
            )
    if ok:
        results.insert(0, Result(CHECK, Status.PASS, "imported: " + ", ".join(ok)))
    return results
