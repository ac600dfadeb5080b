"""The install commands of shared/data/seed-commands.md as recipes, and what the lint says of each.

Also: every lint rule finds the RAPIDS release from any spec form (exact, patch, range, glob,
alternatives, brackets, channel::), and from several admitted releases when all of them agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.record import conda_version, specs
from envcheck.resolve.record.lint import ERROR, INFO, WARN, lint
from envcheck.resolve.record.table import load_record

SEEDS = Path(__file__).parents[1] / "data" / "seed-recipes"
CUDA_BUILD = (
    "rapids.cuda-build",
    WARN,
    "'cudatoolkit=11.0': RAPIDS 22.08's rule is cudatoolkit={major}.* "
    "(integration/22.08/conda/recipes/rapids/meta.yaml:40), which this meets, but the release "
    "was built with CUDA 11.5 (integration/22.08/ci/axis/release.yaml:13)",
)
# recipe file -> what the lint says: (rule, severity, start of the message)
EXPECTED = {
    "rapids-22.08-first": [
        CUDA_BUILD,
        (
            "rapids.not-in-record",
            INFO,
            "the record has no rule for dash, dask-sql, graphistry, pycaret, xarray-spatial",
        ),
    ],
    "rapids-22.08-addons": [CUDA_BUILD],
    # the build strings py39 and cuda_11 agree with the release (python 3.8, 3.9; CUDA 11)
    "dask-cuda-22.08-final": [
        CUDA_BUILD,
        (
            "rapids.not-in-record",
            INFO,
            "the record has no rule for dash, dask-sql, graphistry, ipykernel, pycaret, skorch, "
            "xarray-spatial",
        ),
    ],
    "dask-cuda-22.08-ucx": [
        CUDA_BUILD,
        (
            "rapids.not-in-record",
            INFO,
            "the record has no rule for dash, dask-sql, graphistry, ipykernel, pycaret, skorch, "
            "xarray-spatial",
        ),
    ],
    # no RAPIDS package: the record has nothing to say
    "my-tensorflow": [],
    "my-pytorch": [],
    "my-ray": [],
    "tf-test": [],
    "tf-cpu-py37": [],
}


def test_every_seed_install_command_has_a_recipe():
    assert sorted(p.stem for p in SEEDS.glob("*.yaml")) == sorted(EXPECTED)
    for p in SEEDS.glob("*.yaml"):
        head = p.read_text().splitlines()[0]
        assert head.startswith("# From shared/data/seed-commands.md, line"), p


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_lint_of_each_seed_recipe(name):
    r = load_recipe(SEEDS / f"{name}.yaml")
    found = lint(r.dependencies, r.system, load_record())
    assert [(f.rule, f.severity) for f in found] == [(rule, sev) for rule, sev, _ in EXPECTED[name]]
    for f, (_, _, text) in zip(found, EXPECTED[name], strict=True):
        assert f.message.startswith(text), f.message


def test_the_final_seed_command_keeps_its_build_strings():
    r = load_recipe(SEEDS / "dask-cuda-22.08-final.yaml")
    assert r.dependencies[:2] == (
        "dask-cuda=22.08.00=py39_g9a61ce5_0",
        "dask-cudf=22.08.00=cuda_11_py39_gb71873c701_0",
    )


EL7 = {"glibc": "2.17"}


def _errors(deps, system=EL7):
    return [(f.rule, f.message) for f in lint(deps, system, load_record()) if f.severity == ERROR]


# every form that means RAPIDS 22.08: dask 2023.1.1 contradicts its pin dask ==2022.7.1
FORMS_22_08 = [
    "dask-cuda=22.08.00",
    "dask-cuda=22.08.00=py39_g9a61ce5_0",
    "dask-cuda==22.08.*",
    "dask-cuda==22.08.00",
    "dask-cuda 22.08.* py39*",
    "dask-cuda 22.08.00 *_0",
    "dask-cuda>=22.08,<22.10",
    "dask-cuda>=22.08.00,<22.09",
    "dask-cuda=22.08=*py39*",
    "dask-cuda[version='>=22.08,<22.10',build=py39*]",
    "rapidsai::dask-cuda=22.08",
    "dask-cuda~=22.8.0",
    "rapids=22.08.01",
    "dask-cudf>22.07,<22.09",
]


@pytest.mark.parametrize("spec", FORMS_22_08)
def test_every_spec_form_finds_the_release(spec):
    (rule, message), *rest = _errors([spec, "dask=2023.1.1"])
    assert rule == "rapids.pin" and not rest
    assert "contradicts RAPIDS 22.08" in message and "dask ==2022.7.1" in message


def test_patch_releases_and_ranges_of_other_releases():
    assert [r for r, _ in _errors(["rapids=23.04.01", "python=3.9"])] == ["rapids.python"]
    # a range over releases that all pin another dask: every admitted release says so
    (rule, message), *_ = _errors(["dask-cudf>=23.08,<24.04", "dask=2020.1"])
    assert rule == "rapids.pin"
    assert "every release the recipe admits: 23.08, 23.10, 23.12, 24.02" in message
    # alternatives: 22.08 and 22.10 pin different dask versions; 2023.1 fits neither
    assert [r for r, _ in _errors(["dask-cuda=22.08|22.10", "dask=2023.1"])] == ["rapids.pin"]
    # ... but a dask one of them allows is no contradiction
    assert _errors(["dask-cuda=22.08|22.10", "dask=2022.7.1"]) == []
    # an open range admits releases the record does not know: nothing is claimed
    assert _errors(["cudf>=22.08", "dask=2023.1"]) == []


def test_releases_that_cannot_meet_are_one_release_error():
    ((rule, message),) = _errors(["dask-cuda=22.08.00", "dask-cudf>=22.10"])
    assert rule == "rapids.one-release"
    assert "'dask-cuda=22.08.00' (22.08)" in message


def test_build_strings_agree_with_python_and_cuda():
    rules = [r for r, _ in _errors(["dask-cuda=22.08.00=py39_g9a61ce5_0", "python=3.8"])]
    assert rules == ["rapids.build"]
    ((rule, message),) = _errors(["dask-cuda=22.08.00=py310_g9a61ce5_0"])
    assert rule == "rapids.build" and "not built for Python 3.10" in message
    ((rule, message),) = _errors(["cudf=22.08=cuda_12*"])
    assert rule == "rapids.build" and "CUDA 12" in message
    assert _errors(["dask-cudf=22.08.00=cuda_11_py39_gb71873c701_0", "python=3.9"]) == []


def test_lint_of_the_seed_command_warm_parses_nothing_again():
    # what makes a warm lint cheap: no spec or version is parsed twice (its speed is measured
    # by bench/spec_try.py, in BENCHMARKS.md)
    parsers = (conda_version.parse_version, conda_version.version_spec,
               conda_version.package_spec, specs.overlaps)
    r = load_recipe(SEEDS / "dask-cuda-22.08-final.yaml")
    record = load_record()
    first = lint(r.dependencies, r.system, record)
    before = [f.cache_info() for f in parsers]
    assert lint(r.dependencies, r.system, record) == first
    after = [f.cache_info() for f in parsers]
    assert [a.misses for a in after] == [b.misses for b in before]
    assert all(a.hits > b.hits for a, b in zip(after, before, strict=True))  # asked, and knew


def test_dask_cuda_pins_pandas_in_23_08_to_24_02():
    ((rule, message),) = _errors(["dask-cuda=23.12", "pandas>=2"])
    assert rule == "rapids.range"
    assert "dask-cuda 23.12 requires pandas >=1.3,<1.6.0.dev0 (dask-cuda's pyproject)" in message
    assert _errors(["dask-cuda=23.12", "pandas=1.5"]) == []
    ((rule, message),) = _errors(["dask-cuda>=23.08,<24.04", "pandas>=2"])
    assert "every release the recipe admits: 23.08, 23.10, 23.12, 24.02" in message
    # 24.04's dask-cuda lifts the bound (pandas>=1.3, dask-cuda/24.04/pyproject.toml:22)
    assert _errors(["dask-cuda=24.04", "pandas>=2"]) == []
    # cudf pins pandas too; the rapids meta-package installs both
    rules = _errors(["rapids=23.12", "pandas>=2"])
    assert [m.split(": ", 1)[1].split(" (")[0] for _, m in rules] == [
        "cudf 23.12 requires pandas >=1.3,<1.6.0dev0",
        "dask-cuda 23.12 requires pandas >=1.3,<1.6.0.dev0",
    ]


@pytest.mark.slow
def test_lint_warnings_are_printed_when_the_solve_then_fails(tmp_path, capsys):
    from envcheck.cli import main
    from envcheck.errors import ExitCode
    from tests.support.channel import demo_channel, write_recipe

    channel = demo_channel(tmp_path / "channel")
    # cudatoolkit 11.0 meets 22.08's rule (warning); the channel has no 11.0: the solve fails
    r = write_recipe(tmp_path, channel, "[python=3.9, cuml=22.08, cudatoolkit=11.0]")
    assert main(["build", str(r), "--out", str(tmp_path / "locks")]) == ExitCode.UNSOLVABLE
    err = capsys.readouterr().err
    assert "warn: rapids.cuda-build: 'cudatoolkit=11.0'" in err
    assert err.index("rapids.cuda-build") < err.rindex("envcheck: ")
