"""glibc at least what the locked packages were built against (CentOS 7 has 2.17)."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations, version_tuple
from envcheck.verify.facts import NodeFacts

CHECK = "glibc"


def check_glibc(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """glibc >= the lock's __glibc (or --min-glibc)."""
    if not exp.min_glibc:
        return [
            Result(
                CHECK,
                Status.SKIP,
                f"nothing asked: no glibc requirement (--lock, --min-glibc); glibc "
                f"{facts.glibc or 'n/a'} here",
            )
        ]
    if not facts.glibc:
        return [
            Result(
                CHECK,
                Status.FAIL,
                f"needs glibc >= {exp.min_glibc} but this is not a glibc system ({facts.platform})",
                fix="run on a glibc Linux, or build the environment for this platform",
            )
        ]
    if version_tuple(facts.glibc) < version_tuple(exp.min_glibc):
        return [
            Result(
                CHECK,
                Status.FAIL,
                f"glibc {facts.glibc} is older than the {exp.min_glibc} the packages need",
                fix=f"run on an OS with glibc >= {exp.min_glibc} (RHEL/CentOS 7 has 2.17, RHEL 8 "
                "2.28), or rebuild the environment with __glibc set to this OS in the recipe",
            )
        ]
    return [Result(CHECK, Status.PASS, f"glibc {facts.glibc} >= {exp.min_glibc}")]
