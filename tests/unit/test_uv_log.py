"""uv's verbose log and its derivation read in recipe terms (lines as uv 0.13 writes them)."""

from __future__ import annotations

from packaging.version import Version

from envcheck.resolve.pip import uv_reasoning
from envcheck.resolve.uv_chain import chain
from envcheck.resolve.uv_log import Requirement, ResolverLog, clashes, ranges, shown, touched

LOG = """\
DEBUG Adding direct dependency: torch*
DEBUG Searching for a compatible version of torch (*)
DEBUG Selecting: torch==2.15.0 [compatible] (torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl)
DEBUG Adding transitive dependency for torch==2.15.0: cuda-toolkit[cublas]>=13.2.2, <13.2.2+
DEBUG Adding transitive dependency for torch==2.15.0: triton{sys_platform == 'darwin'}>=3.9.0
DEBUG Adding transitive dependency for cuml-cu12==26.10.0: cuda-toolkit[cublas]>=12.dev0, <13.dev0
DEBUG Recording unit propagation conflict of cuda-toolkit[cublas] from incompatibility of \
(cuda-toolkit, torch)
DEBUG Selecting: torch==2.10.0 [compatible] (torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl)
DEBUG Recording unit propagation conflict of nvidia-nvjitlink-cu12{platform_machine == 'x86_64' \
and sys_platform == 'linux'} from incompatibility of (nvidia-nvjitlink-cu12, torch)
""".splitlines()


def test_the_log_tells_each_tried_version_s_requirements_and_what_it_clashed_on() -> None:
    log = ResolverLog.read(LOG)
    assert log.clashed_on[("torch", "2.15.0")] == ("cuda-toolkit",)
    assert log.clashed_on[("torch", "2.10.0")] == ("nvidia-nvjitlink-cu12",)
    linux = {"sys_platform": "linux"}
    (need,) = log.requirements_on("torch", "2.15.0", "cuda-toolkit", linux)
    assert need.text() == "cuda-toolkit[cublas]==13.2.2"
    assert log.requirements_on("torch", "2.15.0", "triton", linux) == []  # a darwin marker
    (theirs,) = log.requirements_on("cuml-cu12", "26.10.0", "cuda-toolkit", linux)
    assert theirs.text() == "cuda-toolkit[cublas]>=12,<13"
    versions = [Version(v) for v in ("12.8.0", "12.9.1", "13.0.2", "13.2.2")]
    assert clashes([need], [theirs], versions) is True
    assert clashes([theirs], [theirs], versions) is False
    assert touched(LOG[0]) == "torch" and touched(LOG[2]) is None


def test_uv_ranges_read_as_pep_440() -> None:
    (s,) = ranges(">=13.2.2, <13.2.2+") or []
    assert Version("13.2.2") in s and Version("13.2.3") not in s
    alts = ranges(">=14.0.1, <14.1.0 | >=14.1.0+") or []
    assert len(alts) == 2 and not any(Version("14.1.0") in a for a in alts)
    assert ranges("<<bad") is None
    assert Requirement("x", "", "<<bad", "").allows(Version("1")) is None
    assert shown("*") == "" and shown(">=13.2.2, <13.2.2+") == "==13.2.2"


def test_uv_s_derivation_joins_two_entries_through_the_package_they_clash_on() -> None:
    stderr = """error: No solution found when resolving dependencies
  cause: Because cudf-cu12>=26.10.0 depends on pandas>=3.0.0,<3.1.0 and you require \
cudf-cu12>=26.10.dev0, we can conclude that you require pandas>=3.0.0,<3.1.0.
         And because you require pandas<2, we can conclude that your requirements are \
unsatisfiable."""
    entries = {"cudf-cu12": "cudf-cu12==26.10.*", "pandas": "pandas<2", "torch": "torch"}
    assert chain(uv_reasoning(stderr), entries) == (
        "'cudf-cu12==26.10.*' -> cudf-cu12>=26.10.0 requires pandas>=3.0.0,<3.1.0 -x- "
        "pandas<2 <- 'pandas<2'")
    assert chain(uv_reasoning(stderr), {"torch": "torch"}) == ""
