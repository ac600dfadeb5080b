"""Every match-spec form conda's command line accepts is a recipe entry, meaning what conda means.

The reference is rattler's lenient parser (conda's grammar: conda/models/match_spec.py
`_parse_spec_str`); the solver parses strictly, so the recipe hands it rattler's canonical text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rattler import MatchSpec
from rattler.exceptions import InvalidMatchSpecError

from envcheck.errors import BadInput
from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.solve import solve_specs
from envcheck.resolve.spec import conda_spec, solver_spec
from tests.support.channel import pkg, write_channel

# (spec as typed, rattler's canonical reading): conda's forms, from the seed command and docs
FORMS = [
    ("dask-cuda=22.08.00=py39_g9a61ce5_0", "dask-cuda ==22.8.0 py39_g9a61ce5_0"),
    (
        "dask-cudf=22.08.00=cuda_11_py39_gb71873c701_0",
        "dask-cudf ==22.8.0 cuda_11_py39_gb71873c701_0",
    ),
    ("dask-cuda=22.08.00", "dask-cuda 22.8.0.*"),
    ("cudf==22.08.*", "cudf 22.8.*"),
    ("cudf==22.08.00", "cudf ==22.8.0"),
    ("cudf 22.08.* cuda11*", "cudf 22.8.* cuda11*"),
    ("cudf 22.08", "cudf ==22.8"),
    ("cudf 22.08.00 *_0", "cudf ==22.8.0 *_0"),
    ("cudf>=22.08,<22.10", "cudf >=22.8,<22.10"),
    ("cudf >=22.08, <22.10", "cudf >=22.8,<22.10"),
    ("cudf=22.08|22.10", "cudf 22.8.*|==22.10"),
    ("cudf[version='>=22.08,<22.10',build=cuda11*]", "cudf >=22.8,<22.10 cuda11*"),
    ("cudf=22.08[build=cuda11*]", "cudf 22.8.* cuda11*"),
    ("rapidsai::cudf=22.08", "rapidsai::cudf 22.8.*"),
    ("cudf=22.08=*cuda11*", "cudf ==22.8 *cuda11*"),
    ("cudf=22.08 *cuda11*", "cudf ==22.8 *cuda11*"),
    ("ucx-proc=*=gpu", "ucx-proc * gpu"),
    ("rapids=23.04.01", "rapids 23.4.1.*"),
    ("python=3.9=*_cpython", "python ==3.9 *_cpython"),
    ("cudf~=22.08.0", "cudf ~=22.8.0"),
    ("cudf!=22.08.00", "cudf !=22.8.0"),
    ("numpy>=1.21,<1.24|1.25", "numpy >=1.21,<1.24|==1.25"),
    ("cudf=22.08=cuda11*[subdir=linux-64]", 'cudf ==22.8 cuda11*[subdir="linux-64"]'),
    ("cudf[build_number=2]", 'cudf[build_number="==2"]'),
]


@pytest.mark.parametrize(("spec", "canonical"), FORMS)
def test_conda_forms_mean_what_rattler_lenient_means(spec: str, canonical: str) -> None:
    lenient = MatchSpec(spec, strict=False, exact_names_only=True)
    assert str(conda_spec(spec)) == str(lenient) == canonical
    assert solver_spec(spec) == canonical
    # what the solver parses (strictly) is the same spec again: nothing is dropped on the way
    assert str(MatchSpec(solver_spec(spec), strict=True, exact_names_only=True)) == canonical


# near-misses and junk: the loader refuses exactly what rattler's lenient parser refuses
ODD = [
    "dask >>=1", "cudf=", "cudf==", "cudf[version=", "=22.08", "cudf 22.08 a b c",
    "cudf[md5=zz]", "CUDF=22.08", "cudf=22.08=", "cudf ,", "cudf=22.08=build=x", "::cudf",
    "cudf[version='22.08'", "cudf>=22.08,<", "cudf@22.08", "cudf=22.08=cuda 11", "cudf =22.08",
    "cudf 22.08.*=cuda11*", "cudf[build=cuda11*][version=22.08]", "cu*df=22.08", "cudf=*",
]  # fmt: skip


@pytest.mark.parametrize("spec", [s for s, _ in FORMS] + ODD)
def test_loader_accepts_exactly_what_rattler_accepts(tmp_path: Path, spec: str) -> None:
    rattler_ok = solvable = False
    try:
        canonical = str(MatchSpec(spec, strict=False, exact_names_only=True))
        rattler_ok = True
        # rattler's lenient parser keeps a few builds conda refuses ('cudf=22.08=build=x' has
        # build 'build=x'); no solver reads them: refused, saying so
        solvable = str(MatchSpec(canonical, strict=True, exact_names_only=True)) == canonical
    except InvalidMatchSpecError:
        pass
    path = tmp_path / "r.yaml"
    quoted = spec.replace("'", "''")
    path.write_text(
        f"name: x\nchannels: [conda-forge]\nplatforms: [linux-64]\ndependencies: ['{quoted}']\n"
    )
    if solvable:
        assert load_recipe(path).dependencies == (spec,)
    elif rattler_ok:
        with pytest.raises(BadInput, match="which the solver reads as an error"):
            load_recipe(path)
    else:
        with pytest.raises(BadInput, match="is not a conda match spec"):
            load_recipe(path)


@pytest.mark.slow
def test_build_strings_reach_the_solve(tmp_path: Path) -> None:
    """`name=ver=build` picks that build; a glob on the build string picks among builds."""
    url = write_channel(
        tmp_path / "ch",
        [
            pkg("dask-cuda", "22.08.00", build="py38_g9a61ce5_0"),
            pkg("dask-cuda", "22.08.00", build="py39_g9a61ce5_0"),
            pkg("dask-cuda", "22.08.01", build="py39_gffffff_0"),
            pkg("cudf", "22.08.00", build="cuda_11_py39_gb71873c701_0"),
            pkg("cudf", "22.08.00", build="cuda_12_py39_gb71873c701_0", build_number=1),
        ],
    )

    def solve(*specs: str) -> dict[str, tuple[str, str]]:
        got = solve_specs(list(specs), [url], "linux-64", {})
        return {p.name: (p.version, p.build) for p in got}

    assert solve("dask-cuda=22.08.00=py38_g9a61ce5_0")["dask-cuda"] == (
        "22.08.00",
        "py38_g9a61ce5_0",
    )
    # `=22.08.00` alone is 22.08.00.*: the newest build of that version, not 22.08.01
    assert solve("dask-cuda=22.08.00")["dask-cuda"][0] == "22.08.00"
    assert solve("cudf 22.08.* cuda_11*")["cudf"][1] == "cuda_11_py39_gb71873c701_0"
    assert solve("cudf=22.08=*cuda_11*")["cudf"][1] == "cuda_11_py39_gb71873c701_0"
    assert solve("cudf[version='>=22.08,<22.10',build=cuda_11*]")["cudf"][1].startswith("cuda_11")
