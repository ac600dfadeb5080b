"""Real py-rattler solves against channels written by the test (tests/support/channel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.errors import BadInput
from envcheck.resolve.solve import (
    SolvedPackage,
    SolveFailed,
    resolve_channel,
    solve_specs,
    virtual_packages,
)
from tests.support.channel import pkg, write_channel

EL7 = virtual_packages({"cuda": "11.5", "glibc": "2.17"}, "linux-64")


@pytest.fixture
def channel(tmp_path: Path) -> str:
    return write_channel(
        tmp_path / "ch",
        [
            pkg("python", "3.9.18", ["__glibc >=2.17"]),
            pkg("python", "3.12.1", ["__glibc >=2.28"]),
            pkg("dask", "2022.7.1", ["python >=3.8"], noarch="python"),
            pkg("cuml", "22.08.00", ["python 3.9.*", "dask ==2022.7.1", "__cuda >=11"]),
        ],
    )


def test_solve_returns_plain_records_with_urls_and_hashes(channel: str) -> None:
    solved = {p.name: p for p in solve_specs(["cuml"], [channel], "linux-64", EL7)}
    assert set(solved) == {"cuml", "dask", "python"}
    assert all(isinstance(p, SolvedPackage) for p in solved.values())
    # __glibc 2.17 rules out python 3.12 even though it is the newest
    assert solved["python"].version == "3.9.18"
    assert solved["dask"].subdir == "noarch"
    assert solved["cuml"].url == channel + "/linux-64/cuml-22.08.00-0.tar.bz2"
    assert len(solved["cuml"].md5 or "") == 32 and len(solved["cuml"].sha256 or "") == 64
    assert solved["cuml"].depends == ("python 3.9.*", "dask ==2022.7.1", "__cuda >=11")


def test_virtual_packages_decide_the_solve(channel: str) -> None:
    with pytest.raises(SolveFailed) as e:
        solve_specs(["cuml"], [channel], "linux-64", {**EL7, "__cuda": "10.2"})
    assert "__cuda >=11" in e.value.message
    newer = virtual_packages({"glibc": "2.28"}, "linux-64")
    assert [p.version for p in solve_specs(["python"], [channel], "linux-64", newer)] == ["3.12.1"]


def test_constraint_steers_the_solver_to_an_alternative(tmp_path: Path) -> None:
    url = write_channel(
        tmp_path / "ch",
        [pkg("app", "2.0", ["cuml"]), pkg("app", "1.0"), pkg("cuml", "22.08")],
    )
    free = {p.name: p.version for p in solve_specs(["app"], [url], "linux-64", {})}
    assert free == {"app": "2.0", "cuml": "22.08"}
    never = ["cuml[build=__excluded__]"]
    steered = {
        p.name: p.version for p in solve_specs(["app"], [url], "linux-64", {}, constraints=never)
    }
    assert steered == {"app": "1.0"}
    with pytest.raises(SolveFailed) as e:
        solve_specs(["app >=2"], [url], "linux-64", {}, constraints=never)
    assert "cuml" in e.value.message and "constraint" in e.value.message


def test_channel_edits_between_solves_are_seen(tmp_path: Path) -> None:
    root = tmp_path / "ch"
    url = write_channel(root, [pkg("a", "1.0")])
    assert [p.version for p in solve_specs(["a"], [url], "linux-64", {})] == ["1.0"]
    write_channel(root, [pkg("a", "1.0"), pkg("a", "2.0")])
    assert [p.version for p in solve_specs(["a"], [url], "linux-64", {})] == ["2.0"]


def test_missing_local_channel_is_bad_input(tmp_path: Path) -> None:
    missing = (tmp_path / "nope").as_uri()
    with pytest.raises(BadInput, match="does not exist"):
        solve_specs(["a"], [missing], "linux-64", {})


def test_channel_names_resolve_to_anaconda_org() -> None:
    assert resolve_channel("conda-forge") == "https://conda.anaconda.org/conda-forge"
    assert resolve_channel("file:///x/ch/") == "file:///x/ch"
    with pytest.raises(BadInput):
        resolve_channel("ftp://example.org/ch")
    # rattler cannot read these URLs: bad input before any solve, not a solver failure
    with pytest.raises(BadInput, match=r"^channel https://exa mple.org/ch: could not parse url"):
        resolve_channel("https://exa mple.org/ch")
    with pytest.raises(BadInput, match="invalid channel name"):
        resolve_channel("https://")


@pytest.mark.parametrize(
    ("specs", "constraints", "vps", "says"),
    [
        # conda's forms (ucx-proc=*=gpu, python 3.9.18 h0*) are read as conda reads them
        # (tests/unit/test_spec_forms.py); text no conda parser reads is bad input
        (["dask >>=1"], [], {}, "'dask >>=1' is not a conda match spec"),
        (["cudf=22.08=build=x"], [], {}, "which the solver reads as an error"),
        (["python"], ["dask >>=1"], {}, "is not a conda match spec"),
        (["python"], [], {"__glibc": "2..17"}, "InvalidVersionError"),
        (["python"], [], {"__archspec": "x86 64"}, "invalid character ' ' in build string"),
    ],
)
def test_input_the_solver_cannot_parse_is_bad_input(
    channel: str, specs: list[str], constraints: list[str], vps: dict[str, str], says: str
) -> None:
    with pytest.raises(BadInput) as e:
        solve_specs(specs, [channel], "linux-64", vps, constraints=constraints)
    assert e.value.message.startswith("the solver cannot parse its input: ")
    assert says in e.value.message and "\n" not in e.value.message
    # the child keeps serving after a rejected request
    assert {p.name for p in solve_specs(["python=3.9"], [channel], "linux-64", EL7)} == {"python"}


def test_virtual_packages_for_el7() -> None:
    assert EL7 == {
        "__unix": "0",
        "__linux": "3.10",
        "__glibc": "2.17",
        "__cuda": "11.5",
        "__archspec": "x86_64",
    }


def _child_pid() -> int:
    from envcheck.resolve import solve

    assert solve._child is not None
    return solve._child.proc.pid


def test_one_child_serves_every_solve_and_a_dead_one_is_replaced(channel: str) -> None:
    import os
    import signal

    solve_specs(["dask"], [channel], "linux-64", EL7)
    first = _child_pid()
    solve_specs(["python"], [channel], "linux-64", EL7)
    assert _child_pid() == first  # no process start per solve: bisection stays cheap
    os.kill(first, signal.SIGKILL)
    names = {p.name for p in solve_specs(["cuml"], [channel], "linux-64", EL7)}
    assert names == {"cuml", "dask", "python"}
    assert _child_pid() != first
