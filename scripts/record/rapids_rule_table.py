"""The lint's rule table of docs/recipes.md, from examples the lint runs.

    python scripts/record/rapids_rule_table.py [--check]

Each row's examples are recipes (conda entries, pip requirements, system) the shipped record's
lint gives that rule at that severity (or, marked "passes", not at all);
tests/unit/test_record_rule_table.py runs them and holds the docs' table to this rendering.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from doc_section import Section

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "recipes.md"
BEGIN, END = "<!-- rules: begin (scripts/record/rapids_rule_table.py) -->", "<!-- rules: end -->"
SECTION = Section(DOC, BEGIN, END, "the rule table")
EL8, EL7 = (("glibc", "2.28"),), (("glibc", "2.17"),)


@dataclass(frozen=True)
class Example:
    words: str  # markdown, as the table shows it
    deps: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    system: tuple[tuple[str, str], ...] = EL8
    passes: bool = False  # the rule lets it pass (a contrast to the others)
    platforms: tuple[str, ...] = ()  # the recipe's `platforms:`


@dataclass(frozen=True)
class Row:
    rule: str
    severity: str
    label: str  # "" or "(requirement)" ...
    examples: tuple[Example, ...]
    source: str  # markdown


E = Example
ROWS = (
    Row("rapids.one-release", "error", "", (
        E("`dask-cuda=22.08` with `dask-cudf=22.10`", ("dask-cuda=22.08", "dask-cudf=22.10")),
        E("`cudf-cu12==25.8.*` with `pylibcudf-cu12==25.6.*`", (),
          ("cudf-cu12==25.8.*", "pylibcudf-cu12==25.6.*")),
    ), "the `rapids` meta-package pins every member to its own release "
       "(`integration/<rel>/conda/recipes/rapids/meta.yaml`); the wheels' `Requires-Dist: "
       "NAME-cu12==YY.M.*` (`members_pip`)"),
    Row("rapids.pin", "error", "", (
        E("`rapids=22.08` with `dask=2023.1`", ("rapids=22.08", "dask=2023.1"), (), EL7),
        E("pip `dask===2022.7.1` beside `dask-cudf-cu12==25.8.*` (`dask-cudf 25.08 -> "
          "rapids-dask-dependency 25.8.0 -> dask ==2025.7.0`)", (),
          ("dask-cudf-cu12==25.8.*", "dask===2022.7.1")),
        E("`dask-cuda=24.10` with `dask-expr=1.0`", ("dask-cuda=24.10", "dask-expr=1.0")),
        E("`rapids-dask-dependency==25.12.0` with `dask==2025.9.2` (the 25.12.1 hotfix's pin)",
          (), ("rapids-dask-dependency==25.12.0", "dask==2025.9.2")),
        E("`cudf=25.08` alone with `dask=2024.1.1` (cudf does not require dask)",
          ("cudf=25.08", "dask=2024.1.1"), passes=True),
    ), "the record's `requires` (each package's Requires-Dist / conda run section, with its "
       "line), walked from the recipe's entries; where a package's requirements are not in the "
       "data, the release's pin: `versions.yaml` `dask_version` (22.08-23.06), dask-cuda's "
       "`pyproject.toml` (23.08-23.10), rapids-dask-dependency's `meta.yaml` / wheel METADATA "
       "(23.12+, each patch wheel's own)"),
    Row("rapids.range", "error", "(requirement)", (
        E("`cudf=22.08` with `numpy>=1.24` (`cudf 22.08 requires numpy <1.23`)",
          ("cudf=22.08", "numpy>=1.24"), (), EL7),
        E("pip `dask-cuda==25.8.*` with `numba<0.50`", (), ("dask-cuda==25.8.*", "numba<0.50")),
        E("pip `dask-cuda==25.8.*` with `cupy-cuda12x<10` (dask-cuda does not require cupy)",
          (), ("dask-cuda==25.8.*", "cupy-cuda12x<10"), passes=True),
        E("`cudf=24.12` with `pandas>=2.3`", ("cudf=24.12", "pandas>=2.3")),
        E("pip `numpy<2` beside `cudf-cu12==26.10.*`", (), ("cudf-cu12==26.10.*", "numpy<2")),
        E("`cudf=24.06` with `numpy=2.0` (`cudf 24.06 requires numpy >=1.23,<2a0`: cudf's "
          "conda recipe at v24.06.00; pypi.org has no cudf-cu12 24.06 wheel)",
          ("cudf=24.06", "numpy=2.0")),
    ), "the record's `requires`: a package of the recipe's own requirement, or one through "
       "another, with its line (`cudf/<rel>/conda/recipes/cudf/meta.yaml` run section; "
       "`pin_compatible` of a host version as conda-build renders it)"),
    Row("rapids.range", "error", "(meta-package, run requirement)", (
        E("`cuml=22.08` with `numpy>=1.24`", ("cuml=22.08", "numpy>=1.24"), (), EL7),
        E("`cuml=23.08` with `ucx-py=0.31`", ("cuml=23.08", "ucx-py=0.31"), (), EL7),
    ), "where a package of the recipe has no requirements in the data: the `rapids` "
       "meta-package's run requirements (`versions.yaml` ranges it uses) and `run:OWNER:NAME` "
       "(raft-dask's conda recipe `ucx_py_version`, 23.02-24.04: cuml and cugraph pull "
       "raft-dask in; cuml's conda recipe, ucx-py 22.08-22.12; pyraft's ucx)"),
    Row("rapids.range", "warn", "(advice)", (
        E("`dask-cuda=22.08` with `pandas=1.5` (dask-cuda does not require pandas; cudf, which "
          "does, is not in the recipe)", ("dask-cuda=22.08", "pandas=1.5"), (), EL7),
    ), "`versions.yaml` ranges no installed package requires (RAPIDS' own environments): "
       "pandas, pytorch, ucx-py where no requirement names it"),
    Row("rapids.ucxx", "error", "", (
        E("`dask-cuda==25.10.*` with `distributed-ucxx-cu12==0.45.*`", (),
          ("dask-cuda==25.10.*", "distributed-ucxx-cu12==0.45.*")),
        E("`dask-cuda=25.02` with `distributed-ucxx=0.45`",
          ("dask-cuda=25.02", "distributed-ucxx=0.45")),
    ), "`pypi/distributed_ucxx_cu12-0.NN.*.METADATA`: each UCXX series requires one release's "
       "`rapids-dask-dependency`; 24.06-25.06 (no distributed-ucxx-cu12 on pypi.org before "
       "0.45): dask-cuda's conda test dependencies at the release tag "
       "(`dask-cuda/<rel>/dependencies.yaml`, `ucxx==0.NN.*`)"),
    Row("rapids.python", "error", "", (
        E("`rapids=23.04` with `python=3.9`", ("rapids=23.04", "python=3.9"), (), EL7),
        E("`cudf=26.10` with `python_abi=3.10=*_cp310`", ("cudf=26.10", "python_abi=3.10=*_cp310")),
    ), "the conda build matrix (`ci/axis/release.yaml`, `conda-python-build.yaml`), the wheels' "
       "cpXY tags / `Requires-Python` / classifiers"),
    Row("rapids.cuda", "error", "", (
        E("`cudf=22.08` with `cudatoolkit=12.0`", ("cudf=22.08", "cudatoolkit=12.0"), (), EL7),
        E("pip `cudf-cu11==25.2.*` (no CUDA 11 wheels on pypi.org)", (), ("cudf-cu11==25.2.*",)),
        E("`cudf=25.06` on a CUDA 11.2 driver (25.06's CUDA 11 needs driver >= 470.42.01)",
          ("cudf=25.06",), (), (("glibc", "2.28"), ("cuda", "11.2"))),
        E("`cuda-version=13.0` beside `cudf=25.10` on a CUDA 12.8 driver",
          ("cudf=25.10", "cuda-version=13.0"), (), (("glibc", "2.28"), ("cuda", "12.8"))),
        E("pip `cudf-cu13==25.10.*` on a CUDA 12.9 driver", (), ("cudf-cu13==25.10.*",),
          (("glibc", "2.28"), ("cuda", "12.9"))),
        E("`cudf=25.08` with `cuda-version=12.9` on a CUDA 13.0 driver (a newer driver runs it)",
          ("cudf=25.08", "cuda-version=12.9"), (), (("glibc", "2.28"), ("cuda", "13.0")),
          passes=True),
        E("`rapids=23.02` with `cudatoolkit=11.0`", ("rapids=23.02", "cudatoolkit=11.0"), (), EL7),
        E("`cudf=25.06` with `cuda-version=11.2`", ("cudf=25.06", "cuda-version=11.2")),
        E("`cudf=26.10` with `cuda-version<12.2`", ("cudf=26.10", "cuda-version<12.2")),
    ), "conda: the build matrix of the release branch; pip: `pypi/index/cudf-cu1N.tsv`; cudf's "
       "README \"CUDA/GPU requirements\" (`cuda_min`); the docs' `platform_support.yml` "
       "(`cuda:MAJOR`: toolkit_min, driver_min per release; `drivers`: CUDA 13's 580); RAPIDS "
       "support notice 54 (`docs/main/_notices/rsn0054.md`, 12.2+ from 25.12)"),
    Row("rapids.cuda-build", "warn", "", (
        E("`rapids=22.08` with `cudatoolkit=11.0` (built with 11.5)",
          ("rapids=22.08", "cudatoolkit=11.0"), (), EL7),
    ), "the build matrix"),
    Row("rapids.build", "error", "", (
        E("`dask-cudf=22.08.00=cuda_11_py39_*` with `python=3.10`",
          ("dask-cudf=22.08.00=cuda_11_py39_*", "python=3.10"), (), EL7),
    ), "the build string's py/cuda tags against the recipe and the matrix"),
    Row("rapids.glibc", "error", "", (
        E("`cudf=24.06` on glibc 2.17", ("cudf=24.06",), (), EL7),
        E("pip `cudf-cu12==25.8.*` on Ubuntu 18.04 (2.27)", (), ("cudf-cu12==25.8.*",),
          (("glibc", "2.27"),)),
    ), "support notice 37 (`docs/main/_notices/rsn0037.md`) and `platform_support.yml` "
       "`glibc_min`; the manylinux tags of every wheel of the release, lib* included "
       "(`pypi/index/libcudf-cu12.tsv`: `manylinux_2_28` only); `sysroot_version` / "
       "`c_stdlib_version` before 24.06"),
    Row("rapids.ended", "error", "", (
        E("`cuspatial-cu12` beside `cudf-cu12==26.10.*`", (),
          ("cudf-cu12==26.10.*", "cuspatial-cu12")),
        E("`cusignal=24.06`", ("cudf=24.06", "cusignal=24.06")),
        E("`cuproj=25.08`", ("cudf=25.08", "cuproj=25.08")),
    ), "`pypi/files/<lib>-cu12.tsv`: cuspatial's and cuproj's last files are 25.4.0, "
       "cuxfilter's 26.6.0; the `rapids` meta-package lists cusignal through 23.08 "
       "(`integration/23.08/conda/recipes/rapids/meta.yaml:59`); `recipe new --libs/--with` "
       "refuses them too (exit 5)"),
    Row("rapids.platform", "error", "", (
        E("`cudf=23.08` with `cuda-version=12.0` for `linux-aarch64`",
          ("cudf=23.08", "cuda-version=12.0"), (), EL7, platforms=("linux-64", "linux-aarch64")),
        E("`cudf=25.08` for `osx-arm64`", ("cudf=25.08",), platforms=("osx-arm64",)),
        E("`cudf=23.08` with `cuda-version=11.8` for `linux-aarch64`",
          ("cudf=23.08", "cuda-version=11.8"), (), EL7, passes=True,
          platforms=("linux-aarch64",)),
    ), "the ARCH rows (amd64, arm64) of the conda build matrix per CUDA major "
       "(`conda-python-build.yaml` / `compute-matrix.yaml`, 23.06 on; 23.08 and 23.10 built "
       "CUDA 12 for amd64 only); 22.08-23.04's `ci/axis/release.yaml` names no architecture: "
       "not checked; pip recipes: not checked"),
    Row("rapids.unknown-release", "warn", "", (
        E("`cudf=26.12` on glibc 2.28", ("cudf=26.12",)),
    ), "the record covers 22.08-26.10"),
    Row("rapids.not-in-record", "info", "", (
        E("`dask-sql`", ("cudf=24.04", "dask-sql"), (), EL7),
    ), "none: the solve decides"),
)  # fmt: skip


def render(rows: tuple[Row, ...] = ROWS) -> str:
    lines = [BEGIN, "| rule | severity | example | source |", "|---|---|---|---|"]
    for r in rows:
        said = [e.words for e in r.examples if not e.passes]
        passes = [e.words for e in r.examples if e.passes]
        text = "; ".join(said) + (f"; passes: {'; '.join(passes)}" if passes else "")
        rule = f"`{r.rule}`" + (f" {r.label}" if r.label else "")
        lines.append(f"| {rule} | {r.severity} | {text} | {r.source} |")
    return "\n".join([*lines, END])


def with_table(doc: str, text: str) -> str:
    return SECTION.replaced(doc, text)


def main(argv: list[str] | None = None) -> int:
    return SECTION.main("python scripts/record/rapids_rule_table.py", render, argv)


if __name__ == "__main__":
    sys.exit(main())
