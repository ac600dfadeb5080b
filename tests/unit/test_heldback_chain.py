"""The held-back reason read from the first resolution's uv log, in recipe terms."""

from __future__ import annotations

from envcheck.lockfile.pip_package import PipPackage
from envcheck.resolve.heldback import _chain
from envcheck.resolve.pip import Compiled, Resolution, Target
from envcheck.resolve.pypi_index import Page
from envcheck.resolve.uv_log import ResolverLog

ENTRIES = {"torch": "torch", "cuml-cu12": "cuml-cu12==26.10.*"}


def _resolution(libcuml_needs: str) -> Resolution:
    log = [
        "DEBUG Selecting: torch==2.15.0 [compatible] (torch-2.15.0-cp312-cp312-x.whl)",
        "DEBUG Adding transitive dependency for torch==2.15.0: cuda-toolkit[cublas]>=13.2.2, "
        "<13.2.2+",
        f"DEBUG Adding transitive dependency for libcuml-cu12==26.10.0: {libcuml_needs}",
        "DEBUG Recording unit propagation conflict of cuda-toolkit[cublas] from incompatibility "
        "of (cuda-toolkit, torch)",
    ]
    versions = {"torch": "2.4.1", "cuml-cu12": "26.10.0", "libcuml-cu12": "26.10.0",
                "cuda-toolkit": "12.9.1"}  # fmt: skip
    via = {"torch": (), "cuml-cu12": (), "libcuml-cu12": ("cuml-cu12",),
           "cuda-toolkit": ("libcuml-cu12", "torch")}  # fmt: skip
    files = tuple({"filename": f"cuda_toolkit-{v}-py2.py3-none-any.whl", "url": "u",
                   "hashes": {"sha256": "0" * 64}} for v in ("12.9.1", "13.2.2"))  # fmt: skip
    return Resolution(
        tuple(PipPackage(n, v, "u", "0" * 64, {}) for n, v in versions.items()),
        tuple(Compiled(n, versions[n], via[n]) for n in versions),
        {"cuda-toolkit": Page("cuda-toolkit", files)},
        Target.of("3.12", "linux-64", {"glibc": "2.28"}),
        {},
        tuple(log),
    )


def test_the_clash_is_told_from_entry_to_entry_through_the_package_both_sides_pin() -> None:
    res = _resolution("cuda-toolkit[cublas]>=12.dev0, <13.dev0")
    held = _chain(ResolverLog.read(res.log), res, ("torch", "torch", "2.4.1", "2.15.0"), ENTRIES)
    assert held is not None and held.held_by == "recipe pip entry 'cuml-cu12==26.10.*'"
    assert held.chain == ("'torch' -> torch 2.15.0 requires cuda-toolkit[cublas]==13.2.2 -x- "
                          "cuda-toolkit[cublas]>=12,<13 required by libcuml-cu12 26.10.0 <- "
                          "'cuml-cu12==26.10.*'")
    assert held.line().startswith("torch 2.4.1 chosen for recipe entry 'torch', the newest "
                                  "that fits is 2.15.0: held back by recipe pip entry ")


def test_a_requirer_whose_range_leaves_a_version_for_both_is_no_culprit() -> None:
    res = _resolution("cuda-toolkit[cublas]>=12")  # 13.2.2 meets both: the log shows no clash
    assert _chain(ResolverLog.read(res.log), res, ("torch", "torch", "2.4.1", "2.15.0"),
                  ENTRIES) is None  # fmt: skip
