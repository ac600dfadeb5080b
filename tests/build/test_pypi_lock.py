"""A real RAPIDS 26.10 CUDA 12 stack (cudf-cu12, dask-cudf-cu12, dask-cuda, cuml-cu12, torch,
xgboost) locked from PyPI by `envcheck build` through uv: metadata only, checked against the
RAPIDS release record; the resolver's held-back torch, the same recipe pinned newer, the EL7
refusal and `envcheck why` over the pip entries' edges. Skips when PyPI cannot be reached."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from tests.support.fetch import require_host
from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.lockfile.read import read_lock
from envcheck.resolve.lockgraph import read_graph
from envcheck.resolve.record.table import load_record
from tests.support.channel import pkg, write_channel

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).parents[1] / "data" / "pypi-rapids-26.10-cuda12.yaml"
CACHE_LIMIT = 50 * 2**20  # metadata only: a wheel of torch or cudf alone would pass it


@pytest.fixture(scope="module")
def pypi() -> None:
    require_host("pypi.org")  # a real PyPI lock needs it


@pytest.fixture
def uv_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "uv-cache"
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    return cache


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _python_channel(root: Path) -> str:
    return write_channel(root, [pkg("python", "3.12.7", ["__glibc >=2.17"], build="h0_cpython")])


def _recipe(tmp_path: Path, name: str, glibc: str = "2.28", torch: str = "torch") -> Path:
    text = RECIPE.read_text().replace("name: pypi-rapids-26.10-cuda12", f"name: {name}")
    text = text.replace('glibc: "2.28"', f'glibc: "{glibc}"').replace(
        "  - torch\n", f"  - {torch}\n"
    )
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def newest_torch(python: str = "cp312") -> str:
    """From PyPI's JSON API (not the simple API build reads): the newest final torch with a
    manylinux x86_64 wheel for CPython 3.12, not yanked."""
    with urllib.request.urlopen("https://pypi.org/pypi/torch/json", timeout=30) as r:
        doc = json.load(r)
    ok = []
    for version, files in doc["releases"].items():
        v = Version(version)
        for f in files:
            fn = f["filename"]
            if v.is_prerelease or f.get("yanked") or not fn.endswith(".whl"):
                continue
            tags = parse_wheel_filename(fn)[3]
            if any(t.interpreter == python and "manylinux" in t.platform
                   and t.platform.endswith("x86_64") for t in tags):  # fmt: skip
                ok.append(v)
    return str(max(ok))


def test_the_rapids_26_10_pypi_stack_locks_as_the_record_says_and_torch_held_back_is_told(
    pypi: None, uv_cache: Path, tmp_path: Path
) -> None:
    recipe = _recipe(tmp_path, "rapids-pypi")
    out, report = tmp_path / "locks", tmp_path / "report.json"
    channel = _python_channel(tmp_path / "ch")
    rc = main(["build", str(recipe), "--channel-data", channel, "--out", str(out),
               "--json", str(report)])  # fmt: skip
    assert rc == ExitCode.WARN  # the held-back torch
    assert _size(uv_cache) < CACHE_LIMIT, "uv downloaded more than metadata"
    lock = read_lock(out / "rapids-pypi.conda-lock.yml")
    got = {n: p for (m, n), p in lock.for_platform("linux-64").items()}
    release = load_record().release("26.10")
    assert release is not None
    # the lock agrees with the record: dask and distributed as rapids-dask-dependency pins
    # them, a Python the release is built for, the CUDA major it ships
    for name in ("dask", "distributed"):
        assert Version(got[name].version) in SpecifierSet(release.get(name).value), name
    assert got["rapids-dask-dependency"].version.startswith("26.10.")
    for name in ("cudf-cu12", "dask-cudf-cu12", "dask-cuda", "cuml-cu12"):
        assert got[name].version.startswith("26.10."), (name, got[name].version)
        assert got[name].url.startswith("https://files.pythonhosted.org/")
        assert len(got[name].sha256 or "") == 64
    py = ".".join(got["python"].version.split(".")[:2])
    assert py in release.get("python").value
    assert "12" in release.get("cuda_majors").value
    assert not [n for n in got if n.endswith(("-cu11", "-cu13")) and n.startswith(("cudf", "rmm"))]
    # rapids-dask-dependency -> dask is an edge of the written lock (Requires-Dist, from uv)
    nodes = read_graph(out / "rapids-pypi.conda-lock.yml").platforms["linux-64"]
    assert {"dask", "distributed"} <= set(nodes["rapids-dask-dependency"].requires)
    # the held-back torch is a warn naming the entry that clashes and the newest that fits
    newest = newest_torch()
    assert Version(got["torch"].version) < Version(newest)
    warns = [r for r in json.loads(report.read_text())["results"] if r["status"] == "warn"]
    torch = [r["message"] for r in warns if r["message"].startswith("torch ")]
    assert len(torch) == 1, warns
    assert f"torch {got['torch'].version} chosen for recipe entry 'torch'" in torch[0]
    assert f"the newest that fits is {newest}" in torch[0]
    # the chain in recipe terms, read from the resolution's own log: entry -> requirement -x-
    # clashing requirement <- entry
    assert "held back by recipe pip entry 'cuml-cu12==26.10.*': " in torch[0]
    assert f"'torch' -> torch {newest} requires " in torch[0]
    assert torch[0].endswith(" <- 'cuml-cu12==26.10.*'") and " -x- " in torch[0]
    # envcheck why walks the pip entries' real chain
    why = tmp_path / "why.json"
    assert main(["why", "dask", str(out / "rapids-pypi.conda-lock.yml"), "--recipe",
                 str(recipe), "--json", str(why)]) == ExitCode.OK  # fmt: skip
    chains = [row[1] for t in json.loads(why.read_text())["tables"] for row in t["rows"]]
    assert any(
        c.startswith("dask 2026.7.1 <- rapids-dask-dependency 26.10.0 <- dask-cudf-cu12 26.10.")
        and c.endswith("<- recipe pip entry 'dask-cudf-cu12==26.10.*'")
        for c in chains
    ), chains


def test_the_same_recipe_with_torch_pinned_to_its_newest_fails_naming_the_clashing_entries(
    pypi: None, uv_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newest = newest_torch()
    recipe = _recipe(tmp_path, "rapids-pypi-torch", torch=f"torch>={newest}")
    channel = _python_channel(tmp_path / "ch")
    rc = main(["build", str(recipe), "--channel-data", channel, "--out", str(tmp_path / "l")])
    assert rc == ExitCode.UNSOLVABLE
    # the lint's notes (torch has no rule in the record: info) come before the one error line
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if ": info: " not in ln]
    assert len(err) == 1, err
    # in recipe terms (which entries clash) with uv's key line, not uv's text alone
    assert f"recipe pip entries 'cuml-cu12==26.10.*' and 'torch>={newest}' clash:" in err[0]
    assert "are incompatible (uv)" in err[0]
    assert not (tmp_path / "l" / "rapids-pypi-torch.conda-lock.yml").exists()
    assert _size(uv_cache) < CACHE_LIMIT


def test_the_stack_on_glibc_2_17_names_each_wheel_that_needs_a_newer_glibc_and_what_fits(
    pypi: None, uv_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = _recipe(tmp_path, "rapids-pypi-el7", glibc="2.17")
    channel = _python_channel(tmp_path / "ch")
    args = ["build", str(recipe), "--channel-data", channel, "--out", str(tmp_path / "l")]
    # the record refuses it before any resolution
    assert main(args) == ExitCode.UNSOLVABLE
    assert "rapids.glibc: RAPIDS 26.10 needs glibc >= 2.28" in capsys.readouterr().err
    # and so does the resolution, wheel by wheel
    assert main([*args, "--no-lint"]) == ExitCode.UNSOLVABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    line = err[0]
    assert "pip entries do not resolve for glibc 2.17" in line
    head, _, pulled = line.partition("and what they pull in:")
    for name in ("cudf-cu12 26.10.", "cuml-cu12 26.10.", "dask-cuda 26.10."):
        assert f"{name}" in head and "(pip) needs glibc 2.2" in head, name
    assert "dask-cuda 26.10.0 (pip) needs glibc 2.28 (wheel tag manylinux_2_28_" in head
    # xgboost's newest wheels are manylinux_2_28; an older release still has manylinux2014
    assert "xgboost " in head and "newest that fits glibc 2.17: xgboost " in head
    assert "libcudf-cu12 26.10." in pulled
    assert _size(uv_cache) < CACHE_LIMIT


def test_try_adds_each_pip_candidate_alone_to_the_real_stack(
    pypi: None, uv_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = _recipe(tmp_path, "rapids-pypi-try")
    channel = write_channel(tmp_path / "ch", [
        pkg("python", "3.12.7", ["__glibc >=2.17"], build="h0_cpython"),
        pkg("pandas", "1.5.3", ["python >=3.12"], build="py312_0")])
    out = tmp_path / "try.json"
    rc = main(["build", str(recipe), "--channel-data", channel, "--json", str(out), "--try",
               "pip:cugraph-cu12==26.10.*,pip:pandas<2,pip:cuspatial-cu12==26.10.*,"
               "pandas=1.5"])
    assert rc == ExitCode.WARN, capsys.readouterr()
    report = json.loads(out.read_text())
    # beside the lint's table (the RAPIDS release record), the candidates'
    (table,) = [t for t in report["tables"] if t["title"].endswith("+ each candidate alone")]
    rows = {r[0]: r[2:] for r in table["rows"]}
    assert rows["pip:cugraph-cu12==26.10.*"] == ["fits", ""]  # RAPIDS' own add-on, same release
    # cudf-cu12 26.10 requires pandas 3.0: the clash in recipe terms
    assert rows["pip:pandas<2"] == ["conflicts", "'cudf-cu12==26.10.*' and 'pandas<2'"]
    why = {r["check"]: r["message"] for r in report["results"]}
    assert why["try pip:pandas<2"].startswith("conflicts: recipe pip entries 'cudf-cu12==26.10.*' "
                                             "and 'pandas<2' clash: ")
    # cuspatial's wheels stopped before 26.10: uv's reason, not "requirements are unsatisfiable"
    assert rows["pip:cuspatial-cu12==26.10.*"] == ["conflicts", "'cuspatial-cu12==26.10.*'"]
    assert "only cuspatial-cu12<=" in why["try pip:cuspatial-cu12==26.10.*"]
    # a conda candidate that solves, then holds a package the pip entries need newer
    assert rows["pandas=1.5"] == ["conflicts", "'cudf-cu12==26.10.*' and pandas==1.5.3 (conda)"]
    assert why["try pandas=1.5"].startswith("conflicts: the conda entries solve, but then the "
                                            "pip entries do not: ")
    assert why["try pip:cugraph-cu12==26.10.*"].startswith("fits: cugraph-cu12 resolves to 26.10.")
    assert " -x- pandas<2 <- 'pandas<2'" in why["try pip:pandas<2"]
    assert not list(tmp_path.glob("**/*.conda-lock.yml"))  # --try writes nothing
    assert _size(uv_cache) < CACHE_LIMIT


def test_try_says_which_version_a_pip_candidate_resolves_to(
    pypi: None, uv_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = tmp_path / "no-torch.yaml"
    recipe.write_text(RECIPE.read_text().replace("  - torch\n", ""))
    channel = _python_channel(tmp_path / "ch")
    out = tmp_path / "try.json"
    rc = main(["build", str(recipe), "--channel-data", channel, "--json", str(out), "--try",
               "pip:torch"])  # fmt: skip
    assert rc == ExitCode.OK, capsys.readouterr()
    (result,) = [r for r in json.loads(out.read_text())["results"] if r["check"] == "try pip:torch"]
    assert result["message"].startswith("fits: torch resolves to ")
    got = result["message"].rsplit(" ", 1)[1]
    assert Version(got) < Version(newest_torch())  # held back by cuml-cu12 26.10, as the lock
