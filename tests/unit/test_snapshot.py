"""Real conda-lock files become local channels that re-solve to exactly their packages."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml
from rattler import MatchSpec

from envcheck.errors import BadInput
from envcheck.resolve.conflicts import SolveOutcome, diagnose
from envcheck.resolve.solve import SolveFailed, solve_specs, virtual_packages
from tests.support.snapshot import (
    depends_from_lock,
    inconsistencies,
    main,
    snapshot_records,
    split_url,
    write_snapshot,
)

DATA = Path(__file__).parents[1] / "data"
# real conda-lock files of pangeo-data/pangeo-docker-images (copied from shared/data/real)
PYTORCH = DATA / "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml"
ML = DATA / "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"
SYSTEM = virtual_packages({"cuda": "11.8", "glibc": "2.17"}, "linux-64")
# depends the pytorch lock records but its own packages do not satisfy (found by reading it:
# conda-forge patched these records' repodata after the packages were built)
PYTORCH_INCONSISTENT = {"tensorboard", "tensorboard-data-server", "geogif", "prefect"}


@functools.cache
def _records(lock: Path):
    return tuple(snapshot_records(lock))


def _conda_packages(lock: Path) -> list[dict]:
    packages = yaml.load(lock.read_text(), Loader=yaml.CSafeLoader)["package"]
    return [p for p in packages if p["manager"] == "conda"]


def _closure_without(packages: list[dict], bad: set[str]) -> list[dict]:
    """The packages left when ``bad`` and everything that depends on them are dropped."""
    drop = set(bad)
    grew = True
    while grew:
        grew = False
        for p in packages:
            if p["name"] not in drop and drop & set(p["dependencies"]):
                drop.add(p["name"])
                grew = True
    return [p for p in packages if p["name"] not in drop]


def test_depends_go_back_to_conda_match_specs():
    got = depends_from_lock(
        {
            "python": "3.10.* *_cp310",
            "tzdata": "",
            "libabseil": "20230125 cxx17*",
            "mpi": "1.0 mpich",
            "protobuf": "~=1.15",
            "numpy": ">=1.21.6,<2.0a0",
        }
    )
    assert got == sorted(
        [
            "python 3.10.* *_cp310",
            "tzdata",
            "libabseil 20230125 cxx17*",
            "mpi 1.0 mpich",
            "protobuf ~=1.15",
            "numpy >=1.21.6,<2.0a0",
        ]
    )
    parsed = {str(MatchSpec(s).name.normalized): MatchSpec(s) for s in got}
    assert str(parsed["python"].build) == "*_cp310"
    assert str(parsed["libabseil"].build) == "cxx17*"
    assert parsed["tzdata"].version is None


def test_url_gives_channel_subdir_and_build():
    url = "https://conda.anaconda.org/conda-forge/linux-64/python-3.10.11-he550d4f_0_cpython.conda"
    assert split_url(url, "python", "3.10.11") == (
        "https://conda.anaconda.org/conda-forge",
        "linux-64",
        "python-3.10.11-he550d4f_0_cpython.conda",
        "he550d4f_0_cpython",
    )
    with pytest.raises(BadInput, match="is not numpy-1.0-<build>"):
        split_url(url, "numpy", "1.0")


@pytest.mark.slow
@pytest.mark.parametrize("lock", [PYTORCH, ML], ids=["pytorch-notebook", "ml-notebook"])
def test_snapshot_resolves_to_the_locked_packages(tmp_path, lock):
    urls = write_snapshot(lock, tmp_path)
    assert urls == [(tmp_path / "conda-forge").resolve().as_uri()]
    bad = PYTORCH_INCONSISTENT if lock == PYTORCH else set()
    keep = _closure_without(_conda_packages(lock), bad)
    assert len(keep) > 600
    want = {
        (p["name"], p["version"], p["url"], p["hash"]["md5"], p["hash"]["sha256"]) for p in keep
    }
    depended = {d for p in keep for d in p["dependencies"]}
    leaves = sorted(p["name"] for p in keep if p["name"] not in depended)
    # the leaves alone pull in every other package: the depends were converted whole
    for specs in (leaves, [f"{p['name']}=={p['version']}" for p in keep]):
        solved = solve_specs(specs, urls, "linux-64", SYSTEM)
        got = {(s.name, s.version, s.url, s.md5, s.sha256) for s in solved}
        assert got == want


def test_snapshot_is_byte_for_byte_reproducible(tmp_path):
    write_snapshot(PYTORCH, tmp_path / "a")
    write_snapshot(PYTORCH, tmp_path / "b")
    for sd in ("linux-64", "noarch"):
        a = (tmp_path / "a" / "conda-forge" / sd / "repodata.json").read_bytes()
        assert a == (tmp_path / "b" / "conda-forge" / sd / "repodata.json").read_bytes()


def test_inconsistent_depends_of_a_real_lock_are_listed():
    found = inconsistencies(_records(PYTORCH))
    assert {line.split()[0] for line in found} == PYTORCH_INCONSISTENT
    assert any(
        line.startswith("tensorboard 2.11.2 requires google-auth-oauthlib >=0.4.1,<0.5")
        and line.endswith("the lock holds 1.0.0 pyhd8ed1ab_0")
        for line in found
    ), found
    assert inconsistencies(_records(ML)) == []


@pytest.mark.slow
def test_diagnosis_names_a_real_inconsistent_record(tmp_path):
    urls = write_snapshot(PYTORCH, tmp_path)
    packages = _conda_packages(PYTORCH)
    depended = {d for p in packages for d in p["dependencies"]}
    leaves = sorted(p["name"] for p in packages if p["name"] not in depended)

    def solve(specs):
        try:
            solve_specs(specs, urls, "linux-64", SYSTEM)
        except SolveFailed as e:
            return SolveOutcome(False, e.message)
        return SolveOutcome(True)

    d = diagnose(leaves, solve, virtual_packages=SYSTEM)
    assert len(d.entries) == 1 and d.entries[0] in PYTORCH_INCONSISTENT | {"torchgeo"}
    assert d.reasons and all("no package in the channels satisfies it" in r for r in d.reasons)


def test_cli_writes_a_snapshot_and_rejects_a_missing_lock(tmp_path, capsys):
    assert main([str(ML), str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == (tmp_path / "conda-forge").resolve().as_uri()
    assert main([str(tmp_path / "nope.yml"), str(tmp_path)]) == 4
    assert "does not exist" in capsys.readouterr().err
