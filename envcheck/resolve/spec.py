"""Conda match specs read the way conda's command line reads them, handed to the solver intact.

conda accepts `dask-cuda=22.08.00=py39_g9a61ce5_0`, `cudf 22.08.* cuda11*`, `cudf==22.08.*`,
`cudf=22.08|22.10`, `cudf[version='>=22.08,<22.10',build=cuda11*]` and `rapidsai::cudf=22.08`.
rattler's lenient parser gives each the meaning conda gives it (`name=1.2=build` is version
exactly 1.2, `name=1.2` is 1.2.*); rattler.solve parses its string specs strictly, which
rejects several of these forms. So a spec is parsed leniently once and the solver gets
rattler's canonical text of it (`dask-cuda ==22.8.0 py39_g9a61ce5_0`), which the strict parser
reads back to the same spec: version, build string, channel and brackets all reach the solve.
"""

from __future__ import annotations

from functools import lru_cache

from rattler import MatchSpec
from rattler.exceptions import InvalidMatchSpecError


@lru_cache(maxsize=4096)
def _parse(spec: str) -> tuple[MatchSpec, str]:
    try:
        ms = MatchSpec(spec, strict=False, exact_names_only=True)
    except InvalidMatchSpecError as e:
        raise ValueError(f"{spec!r} is not a conda match spec: {str(e).splitlines()[0]}") from None
    canonical = str(ms)
    try:
        again = str(MatchSpec(canonical, strict=True, exact_names_only=True))
    except InvalidMatchSpecError as e:
        again = f"an error ({str(e).splitlines()[0]})"
    if again != canonical:  # the solver would read something else than conda does
        raise ValueError(
            f"{spec!r}: conda reads it as {canonical!r}, which the solver reads as {again}"
        )
    return ms, canonical


def conda_spec(spec: str) -> MatchSpec:
    """The spec as conda's command line reads it; ValueError (one line) if it reads none."""
    return _parse(spec)[0]


def solver_spec(spec: str) -> str:
    """The text that makes rattler.solve read ``spec`` as conda does (build string kept)."""
    return _parse(spec)[1]
