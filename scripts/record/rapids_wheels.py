"""Record entries of the releases known from their PyPI wheels (24.06-26.10), read from the
files rapids_pypi.py keeps under tests/data/rapids-record/pypi/ (no network here).

Pointers are 'pypi/<file>.METADATA:<line>' (a Requires-Dist line) or
'pypi/index/<project>.tsv:<line>' (a wheel's file name: its Python and platform tags).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rapids_pypi import (
    ARCH,
    CUDA_PROJECTS,
    LIB_PROJECTS,
    RELEASES,
    Wheel,
    chosen,
    read_index,
    release_of,
)
from rapids_source import Source, known, unknown

# package -> (record field, the PyPI name cudf-cu12 requires it under)
CUDF_RANGES = {
    "numpy": "numpy",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "numba": "numba",
    "cupy": "cupy-cuda12x",
}


class Wheels:
    """The kept indexes and METADATA of one data folder."""

    def __init__(self, data: Path, pinned: dict[str, Wheel] | None = None) -> None:
        self.data = data
        self.index: dict[str, list[Wheel]] = {}
        self.pinned = pinned or {}  # project -> the patch release's wheel to read instead

    def wheels(self, project: str) -> list[Wheel]:
        if project not in self.index:
            self.index[project] = read_index(self.data, project)
        return self.index[project]

    def line_of(self, project: str, wheel: Wheel) -> str:
        """'pypi/index/<project>.tsv:N' of the wheel's line."""
        rel = f"pypi/index/{project}.tsv"
        hit = Source(self.data, rel).find(rf"^{re.escape(wheel.filename)}\t")
        assert hit is not None, wheel.filename
        return hit[1]

    def metadata(self, project: str, series: str) -> tuple[Wheel, Source] | None:
        w = chosen(self.wheels(project), series)
        pin = self.pinned.get(project)
        if w is not None and pin is not None and release_of(pin.version) == series:
            w = pin
        if w is None:
            return None
        src = Source(self.data, f"pypi/{w.metadata_name}")
        return (w, src) if src.exists() else None


def _requires(src: Source, name: str, marker: str = "") -> tuple[str, str] | None:
    """The specifier of 'Requires-Dist: NAME[extras]SPEC' without an extra marker, and its line."""
    rx = (
        rf"^Requires-Dist: {re.escape(name)}(\[[^\]]*\])?(?![\w.-])"
        r"\s*\(?([^;()]*)\)?\s*(;\s*(.*))?$"
    )
    for i, line in enumerate(src.lines, 1):
        m = re.match(rx, line, re.IGNORECASE)
        if not m or "extra ==" in (m.group(4) or ""):
            continue
        if m.group(4) and marker not in m.group(4):
            continue
        return m.group(2).replace(" ", ""), f"{src.rel}:{i}"
    return None


def _minor_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _python(ws: Wheels, rel: str) -> dict[str, Any]:
    """cpXY tags of cudf-cu12's x86_64 wheels (classifiers for an abi3 wheel) + Requires-Python."""
    got = ws.metadata("cudf-cu12", rel)
    project = "cudf-cu12"
    if got is None:
        got, project = ws.metadata("dask-cuda", rel), "dask-cuda"
    if got is None:
        return unknown("no cudf-cu12 or dask-cuda wheel of this release on PyPI")
    w, src = got
    req = src.find(r"^Requires-Python:")
    ptrs = [req[1]] if req else []
    mine = [
        x for x in ws.wheels(project)
        if x.version == w.version and ARCH in x.tags[2] and x.tags[1] != "abi3"
    ]  # fmt: skip
    tags = sorted({(re.sub(r"^cp3", "3.", x.tags[0]), ws.line_of(project, x)) for x in mine})
    if tags:
        pys = sorted({t for t, _ in tags}, key=_minor_key)
        return known(pys, *ptrs, *[p for _, p in tags], note=f"{project} {w.version} wheels")
    cls = [(m.group(1), p) for m, p in _all(src, r"^Classifier: .*Python :: (3\.\d+)$")]
    note = f"{project} {w.version}: its classifiers (one abi3 or pure wheel for every Python)"
    return known([v for v, _ in cls], *ptrs, *[p for _, p in cls], note=note)


def _all(src: Source, pattern: str) -> list[tuple[re.Match[str], str]]:
    rx = re.compile(pattern)
    out = []
    for i, line in enumerate(src.lines, 1):
        m = rx.search(line)
        if m:
            out.append((m, f"{src.rel}:{i}"))
    return out


def _cuda_majors(ws: Wheels, rel: str) -> dict[str, Any]:
    majors, ptrs = [], []
    for major, project in CUDA_PROJECTS.items():
        mine = [w for w in ws.wheels(project) if release_of(w.version) == rel]
        if mine:
            majors.append(major)
            ptrs.append(ws.line_of(project, mine[0]))
    if not majors:
        return unknown("no cudf-cu11/-cu12/-cu13 wheel of this release on PyPI")
    return known(majors, *ptrs, note="which of cudf-cu11/-cu12/-cu13 has wheels of the release")


def _dask(ws: Wheels, rel: str) -> dict[str, dict[str, Any]]:
    cuda, rdd = ws.metadata("dask-cuda", rel), ws.metadata("rapids-dask-dependency", rel)
    out: dict[str, dict[str, Any]] = {}
    via = _requires(cuda[1], "rapids-dask-dependency") if cuda else None
    for field in ("dask", "distributed", "dask-expr"):
        hit = _requires(rdd[1], field) if rdd else None
        if field == "dask-expr" and not (hit and hit[0]):
            continue  # rapids-dask-dependency pins dask-expr 24.10-25.02 only
        if hit and via and rdd:
            note = (
                f"dask-cuda requires rapids-dask-dependency{via[0]}, whose {rdd[0].version} pins it"
            )
            out[field] = known(hit[0], via[1], hit[1], note=note)
        else:
            out[field] = unknown("no rapids-dask-dependency pin of this release in the data")
    return out


# Requires-Dist a package enforces at install: owner project -> (owner, [(pip name, field)])
RUN_OWNERS = {
    "cudf-cu12": "cudf",
    "dask-cudf-cu12": "dask-cudf",
    "cuml-cu12": "cuml",
}
RUN_NAMES = {
    "pandas": "pandas",
    "numpy": "numpy",
    "numba": "numba",
    "cupy-cuda12x": "cupy",
    "pyarrow": "pyarrow",
    "cuda-python": "cuda-python",
    "scikit-learn": "scikit-learn",
    "scipy": "scipy",
    "treelite": "treelite",
}


def _run_requirements(ws: Wheels, rel: str) -> dict[str, dict[str, Any]]:
    """'run:OWNER:NAME': the ranges cudf's, dask-cudf's and cuml's x86_64 wheels require."""
    out: dict[str, dict[str, Any]] = {}
    for project, owner in RUN_OWNERS.items():
        got = ws.metadata(project, rel)
        if got is None:
            continue
        for pip_name, field in RUN_NAMES.items():
            hit = _requires(got[1], pip_name, marker=ARCH)
            if hit and hit[0]:
                note = f"{project} {got[0].version} requires {pip_name}{hit[0]}"
                out[f"run:{owner}:{field}"] = known(hit[0], hit[1], note=note)
    return out


def _members_pip(ws: Wheels, rel: str) -> dict[str, Any]:
    """Packages the release's wheels require at the release's own version ('libcudf-cu12==
    25.8.*' in cudf-cu12's METADATA): they carry the release as their version too."""
    names, ptrs = [], []
    for project in (*RUN_OWNERS, "dask-cuda"):
        got = ws.metadata(project, rel)
        if got is None:
            continue
        rx = rf"^Requires-Dist: ([a-z0-9_.-]+?)(-cu\d+)?=={re.escape(series_of(rel))}\*"
        for m, ptr in _all(got[1], rx):
            name = m.group(1).lower().replace("_", "-")
            if name not in names:
                names.append(name)
                ptrs.append(ptr)
    if not names:
        return unknown("no wheel of this release in the data names another at its version")
    return known(names, *ptrs, note="required by the release's wheels at its own version")


def _cudf_ranges(ws: Wheels, rel: str) -> dict[str, dict[str, Any]]:
    got = ws.metadata("cudf-cu12", rel)
    out: dict[str, dict[str, Any]] = {}
    for field, name in CUDF_RANGES.items():
        hit = _requires(got[1], name, marker=ARCH) if got else None
        if hit and got:
            out[field] = known(hit[0], hit[1], note=f"cudf-cu12 {got[0].version} requires {name}")
        else:
            why = "no cudf-cu12 wheel of this release on PyPI" if not got else "not required"
            out[field] = unknown(why)
    return out


def _ucx(ws: Wheels, rel: str) -> dict[str, dict[str, Any]]:
    """dask-cuda's distributed-ucxx-cu12==0.NN.* (test extra) -> libucxx-cu12 0.NN's libucx."""
    cuda = ws.metadata("dask-cuda", rel)
    ucxx = cuda[1].find(r"^Requires-Dist: distributed-ucxx-cu12==(0\.\d+)\.\*;") if cuda else None
    old = cuda[1].find(r"^Requires-Dist: ucx-py\s*==\s*(0\.\d+)\.\*") if cuda else None
    out: dict[str, dict[str, Any]] = {
        "ucx-py": known(f"{old[0].group(1)}.*", old[1], note="dask-cuda's test extra")
        if old
        else unknown("dask-cuda of this release names no ucx-py"),
        "distributed-ucxx": known(f"{ucxx[0].group(1)}.*", ucxx[1], note="dask-cuda's test extra")
        if ucxx
        else unknown("dask-cuda of this release names no distributed-ucxx"),
    }
    out.update(_ucxx_series(ws, rel))
    series, via = _series_of(out, ucxx)
    if series and out["distributed-ucxx"]["value"] == "unknown":
        note = f"the release's UCXX ({out['ucxx_series']['note']})"
        out["distributed-ucxx"] = known(f"{series}.*", *via, note=note)
    lib = ws.metadata("libucxx-cu12", series) if series else None
    hit = _requires(lib[1], "libucx-cu12") if lib else None
    if lib and hit:
        note = f"libucx-cu12 of libucxx-cu12 {lib[0].version}, the UCXX of the release"
        out["ucx"] = known(hit[0], *via, hit[1], note=note)
    else:
        out["ucx"] = unknown("no libucxx-cu12 wheel of this release's UCXX on PyPI")
    return out


def _series_of(out: dict[str, dict[str, Any]], ucxx: Any) -> tuple[str, list[str]]:
    """The release's UCXX series (0.NN) and its pointers: dask-cuda's test extra, else the
    series whose distributed-ucxx requires the release's rapids-dask-dependency."""
    if ucxx:
        return ucxx[0].group(1), [ucxx[1]]
    got = out.get("ucxx_series", {})
    if got.get("value", "unknown") == "unknown":
        return "", []
    return str(got["value"]).removesuffix(".*"), list(got["from"])


def _ucxx_series(ws: Wheels, rel: str) -> dict[str, dict[str, Any]]:
    """The UCXX series (0.NN) whose distributed-ucxx-cu12 requires this release's
    rapids-dask-dependency: the only one that installs beside the release's dask-cuda."""
    from rapids_pypi import UCXX_SERIES

    for s in UCXX_SERIES:
        got = ws.metadata("distributed-ucxx-cu12", s)
        hit = _requires(got[1], "rapids-dask-dependency") if got else None
        if got and hit and hit[0] == f"=={series_of(rel)}*":
            note = (f"distributed-ucxx-cu12 {got[0].version} requires rapids-dask-dependency"
                    f"{hit[0]}: UCXX {s} is the release's")  # fmt: skip
            return {
                "run:distributed-ucxx:ucxx": known(f"{s}.*", hit[1], note=note),
                "ucxx_series": known(f"{s}.*", hit[1], note=note),
            }
    return {"ucxx_series": unknown("no distributed-ucxx-cu12 of the data requires this release")}


def series_of(rel: str) -> str:
    """'25.08' -> '25.8.'"""
    yy, mm = rel.split(".")
    return f"{int(yy)}.{int(mm)}."


def _glibc(ws: Wheels, rel: str) -> dict[str, dict[str, Any]]:
    """Each package's x86_64 wheel tag; the release's floor is the highest of their floors."""
    from rapids_pypi import PROJECTS

    tags: dict[str, str] = {}
    floors: list[tuple[tuple[int, ...], str, str]] = []
    for project in (*PROJECTS, *LIB_PROJECTS):
        w = chosen(ws.wheels(project), rel)
        if w is None or ARCH not in w.tags[2]:
            continue
        tags[project] = w.tags[2]
        lows = [
            (int(a), int(b)) for a, b in re.findall(rf"manylinux_(\d+)_(\d+)_{ARCH}", w.tags[2])
        ]
        if lows:
            low = min(lows)
            floors.append((low, f"{low[0]}.{low[1]}", ws.line_of(project, w)))
    if not floors:
        from rapids_source import glibc_after

        after = glibc_after(ws.data)[1]
        after = {**after, "note": f"no binary wheel of this release on PyPI; {after['note']}"}
        return {"manylinux": unknown("no binary wheel of this release on PyPI"), "glibc": after}
    top = max(floors)
    return {
        "manylinux": known(tags, *[p for _, _, p in floors], note="x86_64 wheel tag per package"),
        "glibc": known(
            top[1],
            *[p for low, _, p in floors if low == top[0]],
            note="the highest floor of the release's x86_64 wheels' manylinux tags (each "
            "wheel's lowest tag), the C++ lib* wheels they require included",
        ),  # fmt: skip
    }


def pypi_release_entry(
    data: Path, rel: str, pinned: dict[str, Wheel] | None = None
) -> dict[str, Any]:
    """The release's facts; ``pinned`` reads a patch release's wheel of a project instead of
    the newest (rapids-dask-dependency 25.12.0 rather than 25.12.1)."""
    ws = Wheels(data, pinned)
    note = "from PyPI wheel METADATA: the conda packages of this release are not in the data"
    from rapids_axes import conda_axis

    pip_majors = _cuda_majors(ws, rel)
    entry: dict[str, Any] = {"python_pip": _python(ws, rel), "cuda_majors_pip": pip_majors}
    entry.update(conda_axis(data, rel, pip_majors))
    from rapids_axes import platform_cuda

    entry.update(platform_cuda(data, rel))
    entry["python"] = _python_both(entry["python_pip"], entry["python_conda"])
    entry.update(_dask(ws, rel))
    entry.update(_cudf_ranges(ws, rel))
    entry.update(_run_requirements(ws, rel))
    entry["members_pip"] = _members_pip(ws, rel)
    from rapids_edges import conda_requires, requires, wheel_requires

    # a package with no wheel of the release on pypi.org (cudf 24.06-24.10) keeps its conda
    # recipe's run requirements where the data has the recipe (cudf 24.06 / 24.08's tags)
    entry["requires"] = requires({**conda_requires(data, rel), **wheel_requires(ws, rel)})
    entry.update(_ucx(ws, rel))
    from rapids_conda import conda_ucx, release_platforms

    entry.update(conda_ucx(data, rel, entry))
    entry["platforms"] = release_platforms(data, rel)
    entry.update(_glibc(ws, rel))
    from rapids_axes import conda_glibc

    entry["glibc_conda"] = conda_glibc(data, rel, entry["glibc"])
    for field in ("cuda_rule", "members", "xgboost", "nccl", "pytorch",
                  "cuda-python", "ucx-proc"):  # fmt: skip
        entry.setdefault(field, unknown(f"{note}; they do not say"))
    return entry


def _python_both(pip: dict[str, Any], conda: dict[str, Any]) -> dict[str, Any]:
    """The Pythons of the release: the conda matrix's and the wheels' together (a recipe may
    take either); the note says where they differ."""
    have = [v for v in (pip, conda) if v["value"] != "unknown"]
    if not have:
        return pip
    pys = sorted({p for v in have for p in v["value"]}, key=_minor_key)
    ptrs = [p for v in have for p in v["from"]]
    if len(have) == 2 and pip["value"] != conda["value"]:
        note = (f"conda builds {', '.join(conda['value'])}; pypi.org wheels "
                f"{', '.join(pip['value'])}")  # fmt: skip
    else:
        note = " and ".join(v.get("note", "") for v in have)
    return known(pys, *ptrs, note=note)


def pypi_releases(data: Path) -> dict[str, dict[str, Any]]:
    """Every release of RELEASES that dask-cuda has wheels of."""
    ws = Wheels(data)
    return {
        rel: pypi_release_entry(data, rel)
        for rel in RELEASES
        if chosen(ws.wheels("dask-cuda"), rel) is not None
    }


def pypi_patches(data: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Release -> patch (a PATCH_PROJECTS wheel version with kept METADATA) -> its version,
    cited, and every fact in which the patches differ (25.12.0 pins dask 2025.9.1, the
    25.12.1 hotfix 2025.9.2)."""
    from rapids_pypi import PATCH_PROJECTS

    ws = Wheels(data)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for project in PATCH_PROJECTS:
        for rel in RELEASES:
            kept = [w for w in ws.wheels(project) if release_of(w.version) == rel
                    and Source(data, f"pypi/{w.metadata_name}").exists()]  # fmt: skip
            if len(kept) < 2:
                continue
            kept.sort(key=lambda w: _minor_key(w.version))
            entries = {w.version: pypi_release_entry(data, rel, {project: w}) for w in kept}
            fields = sorted(
                f for f in entries[kept[0].version]
                if len({repr(e.get(f, {}).get("value")) for e in entries.values()}) > 1
            )  # fmt: skip
            out[rel] = {
                w.version: {
                    "version": known(w.version, ws.line_of(project, w)),
                    **{f: entries[w.version][f] for f in fields},
                }
                for w in kept
            }
    return out


def pypi_sources(data: Path) -> dict[str, str]:
    """Kept file -> where it came from (METADATA.tsv, the index headers)."""
    out = {}
    manifest = data / "pypi" / "METADATA.tsv"
    if manifest.exists():
        for line in manifest.read_text().splitlines():
            if line.startswith("#") or not line:
                continue
            name, url, wheel_sha, meta_sha, how = line.split("\t")
            out[f"pypi/{name}"] = (
                f"METADATA of {url} (wheel sha256 {wheel_sha}; METADATA sha256 {meta_sha}, "
                f"read by {how})"
            )
    for path in sorted((data / "pypi" / "index").glob("*.tsv")):
        head = path.read_text().split("\n", 1)[0].lstrip("# ")
        out[f"pypi/index/{path.name}"] = f"PyPI file list: {head}"
    return out
