"""Key modules import in a fresh interpreter (a missing libopenblas shows up here, not later)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import ImportProbe, NodeFacts

from .probes import walk_probes

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

    def judge(module: str, p: ImportProbe) -> str | Result:
        if p.ok:
            return f"{module} ({p.seconds:.2f} s)"
        return Result(CHECK, Status.FAIL, f"import {module} failed: {p.error}", fix=_fix(p.error))

    return walk_probes(
        CHECK,
        exp.import_modules,
        {p.module: p for p in facts.imports},
        nothing="nothing asked: no module to import (--import, or a --lock)",
        judge=judge,
        summary=lambda ok: "imported: " + ", ".join(ok),
    )
