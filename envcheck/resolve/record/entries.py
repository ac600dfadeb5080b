"""A recipe's entries as the lint rules read them, and the package names the rules know."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from envcheck.errors import BadInput
from envcheck.resolve.record.conda_version import package_spec
from envcheck.resolve.record.table import Record

# ranges of the `rapids` meta-package's run requirements: a recipe outside them cannot install it
META_RANGES = ("numpy", "cupy", "numba", "nccl", "ucx")


# ranges versions.yaml holds for RAPIDS' other environments (notebooks, builds): advice only,
# unless a package the recipe installs requires them (run:OWNER:NAME facts)
ADVICE_RANGES = ("pandas", "pytorch", "ucx-py", "distributed-ucxx")


# UCXX packages: one series (0.NN) per release, enforced by distributed-ucxx's
# rapids-dask-dependency pin
UCXX = ("ucxx", "distributed-ucxx")


EXACT = ("dask", "distributed", "dask-expr")


TOOLKITS = ("cudatoolkit", "cuda-version")


@dataclass(frozen=True)
class Entry:
    text: str  # as written in the recipe
    name: str
    version: str | None  # the match spec's version part, as conda reads it; None = any
    build: str | None = None  # the build-string part (a glob), None = any


def parse_entries(specs: Iterable[str]) -> list[Entry]:
    """Conda match specs as entries; ``python_abi 3.11.* *_cp311`` is a Python entry too."""
    out = []
    for s in specs:
        try:
            m = package_spec(s)
        except BadInput:
            continue  # the recipe loader reports what is not a match spec
        out.append(Entry(s, "python" if m.name == "python_abi" else m.name, m.version, m.build))
    return out


_CU_SUFFIX = re.compile(r"^(.+)-cu(\d{2})$")
_CUPY = re.compile(r"^cupy-cuda(\d{2})x$")
# pip projects named for their CUDA major whose record name differs from the base name
_PIP_ALIASES = {"libucx": "ucx", "libucxx": "ucxx"}
# the name a pip wheel's CUDA major takes in the rules: pypi.org's wheels are their own axis
CUDA_WHEEL = "cuda-wheel"


def pep440_to_conda(specifier: str) -> str | None:
    """A PEP 440 specifier as a conda version spec; None where conda has no equal.

    '===2022.7.1' -> '==2022.7.1'; '~=2.1' -> '>=2.1,<3'; '~=2.1.3' -> '>=2.1.3,<2.2';
    '==2.*' -> '2.*'; '!=2.0' stays.
    """
    out = []
    for part in (p.strip() for p in specifier.split(",") if p.strip()):
        m = re.match(r"^(===|~=|==|!=|<=|>=|<|>)\s*(\S+)$", part)
        if not m:
            return None
        op, ver = m.groups()
        if op == "===":
            out.append(f"=={ver}")
        elif op == "~=":
            nums = ver.split(".")
            if len(nums) < 2 or not all(n.isdigit() for n in nums[:-1]):
                return None
            head = nums[:-2] + [str(int(nums[-2]) + 1)]
            out.append(f">={ver},<{'.'.join(head)}")
        elif op == "==" and ver.endswith(".*"):
            out.append(ver)
        else:
            out.append(f"{op}{ver}")
    return ",".join(out)


def pip_entries(requirements: Iterable[str], record: Record) -> list[Entry]:
    """A recipe's pip requirements as the entries the rules read, each keeping its own text:
    'cudf-cu12==26.10.*' says cudf 26.10.* and a CUDA 12 wheel; 'cupy-cuda12x' is cupy;
    every PEP 440 form (===, ~=, !=) reads as its conda equal. What cannot be read is left
    to the resolver, never a crash."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from envcheck.resolve.record.specs import readable

    names = record.release_versioned_names() | {"dask-cuda", "distributed-ucxx", "ucxx", "ucx-py"}
    out: list[Entry] = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        m, cupy = _CU_SUFFIX.match(name), _CUPY.match(name)
        base = "cupy" if cupy else (m.group(1) if m else name)
        base = _PIP_ALIASES.get(base, base) if m else base
        major = cupy.group(1) if cupy else (m.group(2) if m else None)
        version = pep440_to_conda(str(req.specifier)) if req.specifier else None
        if version is None and req.specifier or (version and not readable(version)):
            continue  # a spec conda has no equal for: the resolver judges it
        out.append(Entry(text, base, version or None))
        if major and base in names:
            out.append(Entry(text, CUDA_WHEEL, f"{major}.*"))
    return out
