"""Named shared libraries resolve through the dynamic loader (libcuda, libnccl, libopenblas)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import LibraryProbe, NodeFacts

from .probes import walk_probes

CHECK = "libraries"


def check_libraries(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Every --library NAME (and those the lock implies) loads with dlopen from this env."""

    def judge(name: str, p: LibraryProbe) -> str | Result:
        if p.found:
            return f"{name} -> {p.path}"
        hint = (
            "install the NVIDIA driver (libcuda comes with it)"
            if "libcuda" in name or name == "cuda"
            else f"install the package that provides {name} in this environment, or add its "
            "directory to LD_LIBRARY_PATH"
        )
        return Result(CHECK, Status.FAIL, f"{name} does not load: {p.error}", fix=hint)

    return walk_probes(
        CHECK,
        exp.libraries,
        {p.name: p for p in facts.libraries},
        nothing="nothing asked: no library to resolve (--library, or a --lock)",
        judge=judge,
        summary="; ".join,
    )
