"""Build the RAPIDS release record (rapids.json) from the real files in tests/data/rapids-record.

    python scripts/record/rapids_record.py [--data DIR] [--out FILE] [--check] [--refresh]

Every value carries the file and line it was read from ("from": ["path:line", ...], paths
relative to the data folder, whose SOURCES.tsv names repository, branch and commit of each
file). What the files do not say is "unknown", never filled in. Rerunning on the same files
gives the same bytes; a test holds the shipped table to that.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rapids_source import (  # noqa: F401 - re-exported for tests and the other modules
    DATA,
    PLATFORMS,
    ROOT,
    UNKNOWN,
    Source,
    _all,
    glibc_after,
    known,
    unknown,
)

SCHEMA = "envcheck.rapids-record/1"
RELEASES = (
    "22.08", "22.10", "22.12", "23.02", "23.04", "23.06",
    "23.08", "23.10", "23.12", "24.02", "24.04",
)  # fmt: skip
OUT = ROOT / "envcheck" / "resolve" / "record" / "rapids.json"


def TABLE_TEXT() -> str:  # noqa: N802 - reads like the constant it stands for
    """The shipped table's text."""
    return OUT.read_text()



# versions.yaml key -> record field (ranges as conda match-spec versions)
RANGES = {
    "ucx_version": "ucx",
    "cupy_version": "cupy",
    "numba_version": "numba",
    "numpy_version": "numpy",
    "pandas_version": "pandas",
    "pytorch_version": "pytorch",
    "nccl_version": "nccl",
    "cuda_python_version": "cuda-python",
}


def _matrix(src: Source) -> list[tuple[str, str, str]]:
    """amd64 rows of a shared workflow's build MATRIX: (python, cuda, pointer)."""
    rows = []
    for i, line in enumerate(src.lines, 1):
        if "ARCH: 'amd64'" not in line:
            continue
        py = re.search(r"PY_VER: '([\d.]+)'", line)
        cuda = re.search(r"CUDA_VER: '([\d.]+)'", line)
        if py and cuda:
            rows.append((py.group(1), cuda.group(1), f"{src.rel}:{i}"))
    return rows


def _axis_list(src: Source, key: str) -> list[tuple[str, str]]:
    """Values listed under ``key:`` in a ci/axis file: (value, pointer)."""
    head = src.find(rf"^{key}:\s*$")
    if head is None:
        return []
    out = []
    for i in range(int(head[1].rsplit(":", 1)[1]), len(src.lines)):
        m = re.match(r"^\s+-\s+['\"]?([\d.]+)['\"]?\s*$", src.lines[i])
        if not m:
            break
        out.append((m.group(1), f"{src.rel}:{i + 1}"))
    return out


def _major_minor(v: str) -> str:
    return ".".join(v.split(".")[:2])


def _builds(data: Path, rel: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Python versions and CUDA versions the meta-packages were built for (linux-64)."""
    axis = Source(data, f"integration/{rel}/ci/axis/release.yaml")
    if axis.exists():
        pys = _axis_list(axis, "PYTHON_VER")
        cudas = _axis_list(axis, "CUDA_VER")
        return (
            known([v for v, _ in pys], *[p for _, p in pys]),
            known([_major_minor(v) for v, _ in cudas], *[p for _, p in cudas]),
        )
    build = Source(data, f"integration/{rel}/.github/workflows/build.yaml")
    uses = build.find(r"uses: rapidsai/([\w-]+)/\.github/workflows/conda-python-build\.yaml@")
    if uses is None:
        return unknown("no build matrix in the data"), unknown("no build matrix in the data")
    wf = Source(data, f"{uses[0].group(1)}/{rel}/.github/workflows/conda-python-build.yaml")
    rows = _matrix(wf)
    pys = sorted({r[0] for r in rows}, key=lambda v: tuple(map(int, v.split("."))))
    cudas = sorted({_major_minor(r[1]) for r in rows}, key=lambda v: tuple(map(int, v.split("."))))
    ptr = [uses[1], *dict.fromkeys(r[2] for r in rows)]
    return known(pys, *ptr), known(cudas, *ptr)


def _members(meta: Source) -> dict[str, Any]:
    """Packages the `rapids` meta-package pins to its own release (``={{ minor }}.*``).

    Its test section's imports add the Python packages it installs through them (dask_cudf
    -> dask-cudf), which carry the release's version too.
    """
    names, ptrs = [], []
    for i, line in enumerate(meta.lines, 1):
        m = re.match(r"^\s+-\s+([a-z0-9_-]+)\s+=\{\{\s*(minor_version|major_minor_version)", line)
        if m:
            names.append(m.group(1))
            ptrs.append(f"{meta.rel}:{i}")
    imports = meta.find(r"^\s+imports:")
    if imports:
        start = int(imports[1].rsplit(":", 1)[1])
        for i in range(start, len(meta.lines)):
            m = re.match(r"^\s+-\s+([a-z0-9_]+)\s*(#.*)?$", meta.lines[i])
            if not m:
                break
            name = m.group(1).replace("_", "-")
            if name not in names:
                names.append(name)
                ptrs.append(f"{meta.rel}:{i + 1}")
    return known(names, *ptrs)


def _cuda_rule(meta: Source) -> dict[str, Any]:
    old = meta.find(r"-\s+cudatoolkit =\{\{ cuda_major \}\}\.\*")
    if old:
        return known("cudatoolkit={major}.*", old[1])
    pin = meta.find(r"pin_compatible\('cuda-version', max_pin='x', min_pin='x'\)")
    ctk = meta.find(r"^\s+-\s+cudatoolkit\s*$")
    if pin and ctk:
        return known(
            "cuda-version={major}.*; cudatoolkit with CUDA 11",
            pin[1],
            ctk[1],
            note="pin_compatible(max_pin='x'): the CUDA major the package was built with",
        )
    if pin:
        return known("cuda-version={major}.*", pin[1])
    return unknown("no CUDA rule found in the rapids meta.yaml")


def _dask(data: Path, rel: str, versions: Source, meta: Source) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, field in (("dask_version", "dask"), ("distributed_version", "distributed")):
        kv = versions.key_value(key)
        if kv:
            out[field] = known(kv[0], kv[1])
    if out:
        return out
    via = meta.find(r"^\s+-\s+dask-cuda =\{\{")
    via_ptr = [via[1]] if via else []
    cuda_py = Source(data, f"dask-cuda/{rel}/pyproject.toml")
    for field in ("dask", "distributed"):
        hit = cuda_py.find(rf'^\s+"{field} (==[\d.]+)",')
        if hit:
            out[field] = known(
                hit[0].group(1),
                *via_ptr,
                hit[1],
                note="not in versions.yaml since 23.08: pinned by dask-cuda of the release",
            )
    if out:
        return out
    rdd_req = cuda_py.find(r'^\s+"rapids-dask-dependency==([\d.*]+)",')
    rdd = Source(
        data, f"rapids-dask-dependency/{rel}/conda/recipes/rapids-dask-dependency/meta.yaml"
    )
    for field in ("dask", "distributed", "dask-expr"):
        hit = rdd.find(rf"^\s+-\s+{field} (==[\d.]+)\s*$")
        if hit and rdd_req:
            out[field] = known(
                hit[0].group(1),
                *via_ptr,
                rdd_req[1],
                hit[1],
                note="dask-cuda of the release requires rapids-dask-dependency, which pins it",
            )
    for field in ("dask", "distributed"):
        out.setdefault(
            field,
            unknown(
                "no pin found in versions.yaml, dask-cuda or "
                "rapids-dask-dependency files of this release"
            ),
        )
    return out


def _ucx_py(data: Path, rel: str) -> dict[str, Any]:
    deps = Source(data, f"dask-cuda/{rel}/dependencies.yaml")
    hit = deps.find(r"^\s+-\s+ucx-py\s*=+\s*([\d.*]+)\s*$")
    if hit:
        v = hit[0].group(1).rstrip(".*")  # "0.33" or "0.36.*" -> "0.33", "0.36"
        return known(f"{v}.*", hit[1], note="dask-cuda's test dependency of the release")
    ci = Source(data, f"dask-cuda/{rel}/ci/gpu/build.sh")
    hit = ci.find(r"^export UCXPY_VERSION=([\d.]+)")
    if hit:
        v = hit[0].group(1).rstrip(".")
        return known(f"{v}.*", hit[1], note="dask-cuda's CI of the release")
    return unknown("no ucx-py pin in the data")


def _glibc(data: Path, rel: str, versions: Source) -> dict[str, Any]:
    kv = versions.key_value("sysroot_version")
    if kv:
        return known(kv[0], kv[1], note="conda sysroot the packages are compiled against")
    cfg = Source(data, f"cudf/{rel}/conda/recipes/cudf/conda_build_config.yaml")
    kv = cfg.key_value("sysroot_version") or cfg.key_value("c_stdlib_version")
    if kv:
        return known(kv[0], kv[1], note="cudf's conda sysroot (versions.yaml no longer has it)")
    return unknown("no sysroot in the data")


def _xgboost(versions: Source, xgb_meta: Source, rel: str) -> dict[str, Any]:
    kv = versions.key_value("xgboost_version")
    if kv is None:
        return unknown("no xgboost_version")
    base = kv[0].lstrip("=")
    suffix = xgb_meta.find(r"-\s+xgboost \{\{ xgboost_version \}\}\{\{ (major_)?minor_version \}\}")
    if suffix:
        return known(f"{base}{rel}", kv[1], suffix[1])
    build = xgb_meta.find(r"-\s+xgboost \{\{ xgboost_version \}\} (rapidsai_\S+)")
    if build:
        return known(f"{base} {build[0].group(1)}", kv[1], build[1])
    return known(base, kv[1])


def release_entry(data: Path, rel: str, integ: str = "") -> dict[str, Any]:
    """A release's facts; ``integ`` names another copy of its integration files (a patch
    release's, integration/23.04.00) to read them from."""
    integ = integ or rel
    versions = Source(data, f"integration/{integ}/conda/recipes/versions.yaml")
    meta = Source(data, f"integration/{integ}/conda/recipes/rapids/meta.yaml")
    xgb_meta = Source(data, f"integration/{integ}/conda/recipes/rapids-xgboost/meta.yaml")
    if not (versions.exists() and meta.exists()):
        raise FileNotFoundError(f"{data}/integration/{integ}: versions.yaml or rapids/meta.yaml")
    python, cuda = _builds(data, integ)
    entry: dict[str, Any] = {"python": python, "cuda_builds": cuda}
    if cuda["value"] != UNKNOWN:
        majors = sorted({v.split(".")[0] for v in cuda["value"]}, key=int)
        entry["cuda_majors"] = known(majors, *cuda["from"])
    else:
        entry["cuda_majors"] = unknown("no build matrix in the data")
    entry["cuda_rule"] = _cuda_rule(meta)
    entry.update(_dask(data, rel, versions, meta))
    for key, field in RANGES.items():
        kv = versions.key_value(key)
        if kv is None and field == "cuda-python":
            c11, c12 = (
                versions.key_value("cuda11_cuda_python_version"),
                versions.key_value("cuda12_cuda_python_version"),
            )
            if c11 and c12:
                entry[field] = known({"11": c11[0], "12": c12[0]}, c11[1], c12[1])
                continue
        entry[field] = known(kv[0], kv[1]) if kv else unknown(f"{key} is not in versions.yaml")
    proc = meta.find(r"^\s+-\s+conda-forge::ucx-proc=\*=(\w+)")
    entry["ucx-proc"] = (
        known(f"* {proc[0].group(1)}", proc[1])
        if proc
        else unknown("the rapids meta.yaml of this release does not list ucx-proc")
    )
    entry["ucx-py"] = _ucx_py(data, rel)
    entry["glibc"] = _glibc(data, rel, versions)
    entry["xgboost"] = _xgboost(versions, xgb_meta, rel)
    entry["members"] = _members(meta)
    entry["cuda_min"] = _cuda_min(data, rel)
    entry.update(_run_requirements(data, rel))
    from rapids_edges import conda_requires, requires

    entry["requires"] = requires(conda_requires(data, rel))
    from rapids_conda import release_platforms

    entry["platforms"] = release_platforms(data, integ)
    return entry


# patch releases whose integration files differ from the release branch's head, copied at the
# commit before the change (integration/23.04.00: 23.04.01 moved xgboost from 1.7.1 to 1.7.5)
PATCHES = {"23.04": ("23.04.00",)}


def patch_entries(data: Path, rel: str, head: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each patch release of ``rel`` (the branch head's RAPIDS_VER among them): its version
    (cited) and every fact in which the patch releases differ."""
    entries = {}
    for integ, entry in ((rel, head), *((p, release_entry(data, rel, p)) for p in PATCHES[rel])):
        axis = _axis_list(Source(data, f"integration/{integ}/ci/axis/release.yaml"), "RAPIDS_VER")
        if len(axis) != 1 or (integ != rel and axis[0][0] != integ):
            raise ValueError(f"integration/{integ}/ci/axis/release.yaml: RAPIDS_VER {axis}")
        entries[axis[0][0]] = (entry, axis[0][1])
    value = lambda e, f: e.get(f, {}).get("value")  # noqa: E731 - pointers differ, not facts
    fields = sorted(
        {f for e, _ in entries.values() for f in e}
        - {f for f in head if all(value(e, f) == value(head, f) for e, _ in entries.values())}
    )
    return {
        ver: {"version": known(ver, ptr), **{f: e[f] for f in fields if f in e}}
        for ver, (e, ptr) in sorted(entries.items())
    }


def _cuda_min(data: Path, rel: str) -> dict[str, Any]:
    """The oldest CUDA the release supports: cudf's README, 'CUDA/GPU requirements'."""
    readme = Source(data, f"cudf/{rel}/README.md")
    head = readme.find(r"^#+\s*CUDA/GPU requirements")
    hit = readme.find(r"^\*\s+CUDA (\d+\.\d+)\+\s*$", _line_no(head[1])) if head else None
    if hit is None:
        return unknown("no CUDA requirement in cudf's README of this release")
    return known(hit[0].group(1), hit[1], note="cudf's README: CUDA/GPU requirements")


def _run_requirements(data: Path, rel: str) -> dict[str, dict[str, Any]]:
    """Ranges a package of the release requires to install ("run:OWNER:NAME"), unlike
    versions.yaml's advice: cudf's conda recipe pins pandas in every release; dask-cuda
    23.08-24.02 pins it in its pyproject (the conda package runs it too)."""
    out: dict[str, dict[str, Any]] = {}
    meta = Source(data, f"cudf/{rel}/conda/recipes/cudf/meta.yaml")
    run = meta.find(r"^  run:\s*$")
    hit = meta.find(r"^\s+-\s+pandas\s+([<>=!,.\w]+)\s*$", _line_no(run[1])) if run else None
    if hit:
        out["run:cudf:pandas"] = known(hit[0].group(1), hit[1], note="cudf's conda recipe")
    cuml = Source(data, f"cuml/{rel}/conda/recipes/cuml/meta.yaml")
    ucx_py = _templated_run(cuml, Source(data, f"cuml/{rel}/ci/cpu/build.sh"), "ucx-py")
    if ucx_py:
        out["run:cuml:ucx-py"] = known(ucx_py[0], *ucx_py[1], note="cuml's conda recipe")
    pyraft = Source(data, f"raft/{rel}/conda/recipes/pyraft/meta.yaml")
    cbc = Source(data, f"raft/{rel}/conda/recipes/pyraft/conda_build_config.yaml")
    ucx, via = _templated_run(pyraft, cbc, "ucx"), _run_line(cuml, r"pyraft\s+\{\{")
    if ucx and via:  # cuml requires pyraft, which requires ucx
        out["run:cuml:ucx"] = known(ucx[0], via, *ucx[1], note="pyraft, which cuml requires")
    raft_dask = Source(data, f"raft/{rel}/conda/recipes/raft-dask/meta.yaml")
    raft_cbc = Source(data, f"raft/{rel}/conda/recipes/raft-dask/conda_build_config.yaml")
    ucx_py = _templated_run(raft_dask, raft_cbc, "ucx-py")
    if ucx_py:
        out["run:raft-dask:ucx-py"] = known(ucx_py[0], *ucx_py[1], note="raft-dask's conda recipe")
    pyproject = Source(data, f"dask-cuda/{rel}/pyproject.toml")
    hit = pyproject.find(r'^\s+"pandas\s*([<>=!,.\w]+)",')
    if hit and "<" in hit[0].group(1):  # an upper bound: 24.04's plain ">=1.3" says nothing new
        out["run:dask-cuda:pandas"] = known(hit[0].group(1), hit[1], note="dask-cuda's pyproject")
    return out


def _run_line(meta: Source, pattern: str) -> str | None:
    """The pointer of the first run requirement matching ``pattern`` (after ``  run:``)."""
    run = meta.find(r"^  run:\s*$")
    hit = meta.find(rf"^\s+-\s+{pattern}", _line_no(run[1])) if run else None
    return hit[1] if hit else None


def _templated_run(meta: Source, values: Source, name: str) -> tuple[str, list[str]] | None:
    """A run requirement written ``- NAME [>=]{{ var }}``, its variable resolved where the
    recipe takes it from: an environment variable the CI script exports
    (``{% set var=environ.get('ENV') %}`` + ``export ENV='0.27.*'``) or conda_build_config.yaml.
    Returns (range, pointers)."""
    ptr = _run_line(meta, rf"{re.escape(name)}\s+(>=)?\{{\{{\s*\w+\s*\}}\}}\s*$")
    if ptr is None:
        return None
    line = meta.lines[_line_no(ptr) - 1]
    m = re.search(r"(>=)?\{\{\s*(\w+)\s*\}\}", line)
    if m is None:
        return None
    op, var = m.group(1) or "", m.group(2)
    env = meta.find(rf"set {var}\s*=\s*environ\.get\('(\w+)'\)")
    if env:
        hit = values.find(rf"^export {env[0].group(1)}='?([^'\s]+)'?\s*$")
        return (f"{op}{hit[0].group(1)}", [ptr, env[1], hit[1]]) if hit else None
    kv = values.key_value(var)
    return (f"{op}{kv[0]}", [ptr, kv[1]]) if kv else None


def _line_no(pointer: str) -> int:
    return int(pointer.rsplit(":", 1)[1])


def _sources(data: Path) -> dict[str, str]:
    out = {}
    for line in (data / "SOURCES.tsv").read_text().splitlines():
        rel, repo, branch, commit, path = line.split("\t")
        out[rel] = f"{repo}@{commit} ({branch}) {path}"
    return out


def build_record(data: Path = DATA, releases: Iterable[str] = RELEASES) -> dict[str, Any]:
    releases = tuple(releases)
    from rapids_axes import cuda_floor, driver_mins, libraries
    from rapids_wheels import pypi_patches, pypi_releases, pypi_sources  # it imports this

    sources = {**_sources(data), **pypi_sources(data)}
    conda = {rel: release_entry(data, rel) for rel in releases}
    return {
        "schema": SCHEMA,
        "generated_by": "python scripts/record/rapids_record.py",
        "data": "tests/data/rapids-record (SOURCES.tsv: repository, branch, commit per file)",
        "releases": {
            **conda,
            **pypi_releases(data),
        },
        # releases the data does not cover: what is known about them comes from these notices
        "after": dict(zip(("first_release", "glibc"), glibc_after(data), strict=True)),
        # patch releases that differ: release -> patch -> the facts that differ
        "patches": {
            **{
                rel: patch_entries(data, rel, release_entry(data, rel))
                for rel in PATCHES
                if rel in releases
            },
            **pypi_patches(data),
        },
        # each library's releases on pypi.org and its last (cuspatial ends with 25.04)
        "libraries": {**ended_members(conda), **libraries(data)},
        # minimums that hold from a release on, whether the data covers the release or not
        "floors": {"cuda": cuda_floor(data)},
        # per CUDA major (12 on): the driver its toolkits need (CUDA 13: 580, CUDA 13.0's)
        "drivers": driver_mins(data),
        "sources": sources,
    }


def ended_members(conda: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Members of the `rapids` meta-package that it stops listing before the newest release
    whose meta-package the data has (cusignal: through 23.08): ended, with the last line. A
    package named for a member that goes on (cudf-kafka: cudf) is built with it, not ended."""
    order = sorted(conda, key=lambda r: tuple(map(int, r.split("."))))
    newest = order[-1]
    seen: dict[str, list[tuple[str, str]]] = {}
    for rel in order:
        members = conda[rel]["members"]
        if members["value"] == UNKNOWN:
            continue
        for name, ptr in zip(members["value"], members["from"], strict=True):
            seen.setdefault(name, []).append((rel, ptr))
    out = {}
    for name, where in sorted(seen.items()):
        last, ptr = where[-1]
        if last == newest or any(
            name.startswith(f"{other}-") and seen[other][-1][0] == newest for other in seen
        ):
            continue
        after = order[order.index(last) + 1]
        note = (f"the rapids meta-package lists {name} through {last}, not from {after} on "
                f"(integration/{after}/conda/recipes/rapids/meta.yaml)")  # fmt: skip
        value = {"releases": [r for r, _ in where], "last": last, "ended": True}
        out[name] = known(value, ptr, note=note)
    return out


def render(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/record/rapids_record.py", description=__doc__)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--check", action="store_true", help="exit 1 if --out differs from a rebuild")
    p.add_argument("--refresh", action="store_true",
                   help="first fetch the PyPI file lists and wheel METADATA of RAPIDS "
                   "24.06-26.10 into DATA/pypi (network; METADATA, never a wheel)")  # fmt: skip
    args = p.parse_args(argv)
    if args.refresh:
        from rapids_pypi import refresh

        print(f"fetched {len(refresh(args.data))} METADATA files into {args.data / 'pypi'}")
    text = render(build_record(args.data))
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print(f"{args.out}: {'up to date' if same else 'differs from a rebuild'}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
