"""Named shared libraries resolve through the dynamic loader (libcuda, libnccl, libopenblas)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

from .imports import NOT_PROBED_FIX

CHECK = "libraries"


def check_libraries(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Every --library NAME (and those the lock implies) loads with dlopen from this env."""
    if not exp.libraries:
        return [Result(CHECK, Status.SKIP, "no library to resolve (--library, or a --lock)")]
    probes = {p.name: p for p in facts.libraries}
    results, ok = [], []
    unprobed = [n for n in exp.libraries if n not in probes]
    if unprobed:
        results.append(
            Result(
                CHECK,
                Status.ERROR,
                f"not probed: {', '.join(unprobed)} (facts were collected without them)",
                fix=NOT_PROBED_FIX,
            )
        )
    for name in exp.libraries:
        p = probes.get(name)
        if p is None:
            continue
        if p.found:
            ok.append(f"{name} -> {p.path}")
        else:
            hint = (
                "install the NVIDIA driver (libcuda comes with it)"
                if "libcuda" in name or name == "cuda"
                else f"install the package that provides {name} in this environment, or add its "
                "directory to LD_LIBRARY_PATH"
            )
            results.append(Result(CHECK, Status.FAIL, f"{name} does not load: {p.error}", fix=hint))
    if ok:
        results.insert(0, Result(CHECK, Status.PASS, "; ".join(ok)))
    return results
