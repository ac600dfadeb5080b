"""Each RAPIDS package's own install requirements per release (the record's 'requires'): the
wheels' Requires-Dist (24.06 on, one kept METADATA per project and release) and the conda
recipes' run section where the data has them (cudf, dask-cudf, rapids-dask-dependency before
24.06), each requirement with its file and line. The lint walks these edges from a recipe's
entries: a pin binds a recipe only through a package of it that requires it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from rapids_pypi import ARCH, PROJECTS
from rapids_source import Source, known, unknown

from envcheck.resolve.record.entries import pep440_to_conda  # the lint reads pip specs so too

# conda recipes (before the wheels) whose run section the data keeps: package -> path
CONDA_RECIPES = {
    "cudf": "cudf/{rel}/conda/recipes/cudf/meta.yaml",
    "dask-cudf": "cudf/{rel}/conda/recipes/dask-cudf/meta.yaml",
    "rapids-dask-dependency": "rapids-dask-dependency/{rel}/conda/recipes/"
    "rapids-dask-dependency/meta.yaml",
}
_CU = re.compile(r"^(.+)-cu\d{2}$")
_CUPY = re.compile(r"^cupy-cuda\d{2}x$")


def base_name(pip_name: str) -> str:
    """'rapids-dask-dependency' as is; 'libcudf-cu12' -> 'libcudf'; 'cupy-cuda12x' -> 'cupy'."""
    name = canonicalize_name(pip_name)
    if _CUPY.match(name):
        return "cupy"
    m = _CU.match(name)
    return m.group(1) if m else name


def _binds(marker: str) -> bool:
    """Whether a Requires-Dist marker holds on linux x86_64 without extras."""
    if "extra" in marker:
        return False
    m = re.search(r'platform_machine\s*(==|!=)\s*"([^"]+)"', marker)
    return m is None or (m.group(1) == "==") == (m.group(2) == ARCH)


def wheel_requires(ws: Any, rel: str) -> dict[str, dict[str, Any]]:
    """package -> {"version", "requires": [[name, conda spec, pointer], ...]} of the release's
    kept METADATA."""
    out: dict[str, dict[str, Any]] = {}
    for project in PROJECTS:
        got = ws.metadata(project, rel)
        if got is None:
            continue
        wheel, src = got
        reqs = []
        for i, line in enumerate(src.lines, 1):
            if not line.startswith("Requires-Dist: "):
                continue
            try:
                req = Requirement(line.removeprefix("Requires-Dist: "))
            except InvalidRequirement:
                continue
            if req.marker is not None and not _binds(str(req.marker)):
                continue
            spec = pep440_to_conda(str(req.specifier)) or "" if req.specifier else ""
            reqs.append([base_name(req.name), spec, f"{src.rel}:{i}"])
        out[base_name(project)] = {"version": wheel.version, "requires": reqs}
    return out


_PIN_COMPATIBLE = re.compile(
    r"^\s+-\s+\{\{\s*pin_compatible\(\s*'([\w.-]+)'\s*,\s*max_pin\s*=\s*'(x(?:\.x)*)'\s*\)\s*\}\}"
)


def _host_prefix(src: Source, name: str) -> list[int] | None:
    """The version prefix the recipe's host section builds ``name`` with: ``numpy 1.23`` ->
    [1, 23]; ``pyarrow ==16.1.0.*`` -> [16, 1, 0]; ``pyarrow =8`` -> [8]."""
    host = src.find(r"^  host:\s*$")
    start = int(host[1].rsplit(":", 1)[1]) if host else len(src.lines)
    for line in src.lines[start:]:
        if line.strip() and not line.startswith("    "):
            break
        m = re.match(
            rf"^\s+-\s+{re.escape(name)}\s+(?:==?)?(\d+(?:\.\d+)*)(?:\.\*)?\s*(#.*)?$", line
        )
        if m:
            return [int(x) for x in m.group(1).split(".")]
    return None


def pin_compatible(src: Source, line: str) -> tuple[str, str] | None:
    """``{{ pin_compatible('numpy', max_pin='x') }}`` as conda-build renders it from the host
    section's version (``numpy 1.23``): (name, ">=1.23,<2a0"). The lower bound is the host
    spec's prefix (conda-build takes the host's full version, which starts with it); the
    upper bound is conda-build's, the host version's first len(max_pin) parts with the last
    one raised, then ``a0``. None where the prefix is shorter than max_pin (``pyarrow =8``
    with max_pin='x.x.x': the upper bound needs the patch the host solved to)."""
    m = _PIN_COMPATIBLE.match(line)
    if m is None:
        return None
    name, depth = m.group(1), len(m.group(2).split("."))
    prefix = _host_prefix(src, name)
    if prefix is None or len(prefix) < depth:
        return None
    top = [*prefix[: depth - 1], prefix[depth - 1] + 1]
    low = ".".join(map(str, prefix))
    return name, f">={low},<{'.'.join(map(str, top))}a0"


def conda_requires(data: Path, rel: str) -> dict[str, dict[str, Any]]:
    """package -> {"version", "requires"} from the run section of its conda recipe; a
    templated spec ({{ ... }}) is kept as any version, except pin_compatible() of a host
    version (pin_compatible above); a requirement under ``{% if %}`` (one CUDA major's) is
    left out."""
    out: dict[str, dict[str, Any]] = {}
    for pkg, path in CONDA_RECIPES.items():
        src = Source(data, path.format(rel=rel))
        run = src.find(r"^  run:\s*$")
        if run is None:
            continue
        reqs, depth = [], 0  # inside {% if %}: one CUDA major's requirement, left out
        for i in range(int(run[1].rsplit(":", 1)[1]), len(src.lines)):
            line = src.lines[i].split("#")[0].rstrip()
            if line and not line.startswith("    "):
                break
            depth += len(re.findall(r"\{%-?\s*if\b", line))
            depth -= len(re.findall(r"\{%-?\s*endif\b", line))
            if depth or "{%" in line:
                continue
            pinned = pin_compatible(src, line)
            if pinned:
                reqs.append([pinned[0], pinned[1], f"{src.rel}:{i + 1}"])
                continue
            m = re.match(r"^\s+-\s+([A-Za-z0-9_.-]+)\s*(.*)$", line)
            if m is None:
                continue
            spec = "" if "{" in m.group(2) else m.group(2).replace(" ", "")
            reqs.append([m.group(1).lower(), spec, f"{src.rel}:{i + 1}"])
        if reqs:
            out[pkg] = {"version": rel, "requires": reqs}
    return out


def requires(edges: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if not edges:
        return unknown("no requirements of this release's packages in the data")
    ptrs = [r[2] for e in edges.values() for r in e["requires"]]
    note = "each package's own install requirements: [name, conda spec, pointer]"
    return known(dict(sorted(edges.items())), *ptrs[:1], note=note)
