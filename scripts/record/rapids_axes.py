"""The conda axis of the releases known from their PyPI wheels (24.06-26.10), the libraries'
lifetimes on pypi.org and the CUDA floor RAPIDS support notice 54 sets.

Conda and pip are separate axes: a release can ship CUDA 11 on the rapidsai conda channel and
not on pypi.org. The conda axis is read from shared-workflows' build matrix of the release's
branch (conda-python-build.yaml, or compute-matrix.yaml's conda-python-build section from
26.06), held against RAPIDS docs' platform support table; pip's from which cudf-cuNN project
has wheels of the release on pypi.org (rapids_wheels.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rapids_pypi import FILE_PROJECTS, RELEASES, read_files, release_of
from rapids_source import PLATFORMS, Source, known, unknown

WORKFLOW = "shared-workflows/{rel}/.github/workflows/conda-python-build.yaml"
COMPUTE = "shared-workflows/{rel}/.github/workflows/compute-matrix.yaml"


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def conda_matrix(data: Path, rel: str) -> list[tuple[str, str, str]]:
    """amd64 rows (python, CUDA major.minor, pointer) of the release's conda-python-build."""
    src, start, stop = Source(data, WORKFLOW.format(rel=rel)), 0, None
    if not src.exists():
        src = Source(data, COMPUTE.format(rel=rel))
        head = src.find(r"^\s+conda-python-build:\s*$")
        if head is None:
            return []
        start = int(head[1].rsplit(":", 1)[1])
        end = src.find(r"^\s+nightly:", start)
        stop = int(end[1].rsplit(":", 1)[1]) if end else None
    rows = []
    for i, line in enumerate(src.lines[start:stop], start + 1):
        if "ARCH: 'amd64'" not in line:
            continue
        py = re.search(r"PY_VER: '([\d.]+)'", line)
        cuda = re.search(r"CUDA_VER: '(\d+\.\d+)", line)
        if py and cuda:
            rows.append((py.group(1), cuda.group(1), f"{src.rel}:{i}"))
    return rows


def _docs_majors(data: Path, rel: str) -> tuple[list[str], list[str]]:
    """CUDA majors RAPIDS docs' platform support table lists for the release, and pointers."""
    table = Source(data, PLATFORMS)
    head = table.find(rf'^  - version: "{re.escape(rel)}"')
    if head is None:
        return [], []
    majors, ptrs = [], []
    for i in range(int(head[1].rsplit(":", 1)[1]), len(table.lines)):
        line = table.lines[i]
        if line.startswith("  - version:"):
            break
        if m := re.match(r"^      - major: (\d+)", line):
            majors.append(m.group(1))
            ptrs.append(f"{table.rel}:{i + 1}")
    return majors, ptrs


def conda_axis(data: Path, rel: str, pip_majors: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """python, cuda_builds, cuda_majors of the conda packages; the build matrix wins over the
    docs' table where both speak (it is what was built), and the note says whether they agree."""
    rows = conda_matrix(data, rel)
    docs, docs_ptrs = _docs_majors(data, rel)
    if not rows:
        why = "no conda build matrix of this release in the data"
        return {
            "python_conda": unknown(why),
            "cuda_builds": unknown(why),
            "cuda_majors": {
                **pip_majors,
                "note": f"{why}: the majors of its pypi.org wheels stand in "
                f"({pip_majors.get('note', '')})",
            },
        }
    ptrs = list(dict.fromkeys(p for _, _, p in rows))
    pys = sorted({r[0] for r in rows}, key=_key)
    builds = sorted({r[1] for r in rows}, key=_key)
    majors = sorted({b.split(".")[0] for b in builds}, key=int)
    note = "shared-workflows' conda-python-build matrix of the release (amd64)"
    if docs:
        agree = "agrees" if docs == majors else f"lists CUDA {', '.join(docs)}; the matrix wins"
        note += f"; RAPIDS docs' platform support {agree}"
    return {
        "python_conda": known(pys, *ptrs, note=note),
        "cuda_builds": known(builds, *ptrs, note=note),
        "cuda_majors": known(majors, *ptrs, *docs_ptrs, note=note),
    }


def platform_cuda(data: Path, rel: str) -> dict[str, dict[str, Any]]:
    """'cuda:MAJOR' per CUDA major RAPIDS docs' platform support lists for the release: its
    toolkit_min, toolkit_max and driver_min (the driver of toolkit_min's CUDA), each cited."""
    table = Source(data, PLATFORMS)
    head = table.find(rf'^  - version: "{re.escape(rel)}"')
    if head is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    major, seen, ptrs = "", {}, []
    for i in range(int(head[1].rsplit(":", 1)[1]), len(table.lines) + 1):
        line = table.lines[i] if i < len(table.lines) else "  - version:"
        m = re.match(r"^      - major: (\d+)", line)
        if (m or line.startswith("  - version:")) and major and len(seen) == 3:
            note = (f"RAPIDS docs' platform support: CUDA {major} toolkit {seen['toolkit_min']}"
                    f"-{seen['toolkit_max']}, driver >= {seen['driver_min']} (the driver of "
                    f"CUDA {seen['toolkit_min']})")  # fmt: skip
            out[f"cuda:{major}"] = known(dict(seen), *ptrs, note=note)
        if line.startswith("  - version:"):
            break
        if m:
            major, seen, ptrs = m.group(1), {}, []
        elif kv := re.match(r'^        (toolkit_min|toolkit_max|driver_min): "([\d.]+)"', line):
            seen[kv.group(1)] = kv.group(2)
            ptrs.append(f"{table.rel}:{i + 1}")
    return out


def driver_mins(data: Path) -> dict[str, dict[str, Any]]:
    """Per CUDA major (12 on), the driver RAPIDS docs' platform support names for it in the
    oldest release that lists it, with the CUDA of that driver (its toolkit_min): a driver of
    an older major runs none of that major's toolkits."""
    table = Source(data, PLATFORMS)
    out: dict[str, dict[str, Any]] = {}
    for rel, major, low, ptr in _toolkit_mins(table):
        drv = table.find(r'^        driver_min: "([\d.]+)"', _line_no(ptr))
        if int(major) < 12 or drv is None:
            continue  # the file lists the newest release first: the oldest one stays
        note = (f"RAPIDS docs' platform support, RAPIDS {rel}: CUDA {major} needs driver >= "
                f"{drv[0].group(1)}, the driver of CUDA {low}")  # fmt: skip
        out[major] = known({"driver_min": drv[0].group(1), "cuda": low}, ptr, drv[1], note=note)
    return out


def _line_no(pointer: str) -> int:
    return int(pointer.rsplit(":", 1)[1])


def conda_glibc(data: Path, rel: str, floor: dict[str, Any]) -> dict[str, Any]:
    """cudf's conda c_stdlib_version: the glibc its conda packages are built against. Where it
    is below the release's floor (2.17 through 24.12) the floor wins: RAPIDS support notice 37
    removes glibc 2.17 in 24.06 and the wheels need their manylinux tag's glibc."""
    cfg = Source(data, f"cudf/{rel}/conda/recipes/cudf/conda_build_config.yaml")
    kv = cfg.key_value("c_stdlib_version")
    if kv is None:
        return unknown("no cudf conda_build_config.yaml of this release in the data")
    note = "cudf's conda recipe: c_stdlib_version"
    if floor["value"] != "unknown" and _key(kv[0]) < _key(floor["value"]):
        note += (f" {kv[0]}, below the release's glibc {floor['value']}, which wins: RAPIDS "
                 "support notice 37 removes glibc 2.17 (CentOS 7) in 24.06")  # fmt: skip
    return known(kv[0], kv[1], note=note)


def libraries(data: Path) -> dict[str, dict[str, Any]]:
    """Each library's releases on pypi.org (wheels or placeholder sdists) and its last one;
    'ended' when the last is older than the newest release of the data."""
    newest = max(RELEASES, key=_key)
    out: dict[str, dict[str, Any]] = {}
    for project in FILE_PROJECTS:
        rows = read_files(data, project)
        if not rows:
            continue
        rel_path = f"pypi/files/{project}.tsv"
        src = Source(data, rel_path)
        seen: dict[str, str] = {}
        for version, name in rows:
            rel = release_of(version)
            hit = src.find(rf"^{re.escape(version)}\t{re.escape(name)}$")
            if rel and hit and rel not in seen:
                seen[rel] = hit[1]
        if not seen:
            continue
        have = sorted(seen, key=_key)
        last = have[-1]
        lib = re.sub(r"-cu\d+$", "", project)
        note = f"{project} has files of RAPIDS {have[0]}-{last} on pypi.org"
        if last != newest:
            note += f"; none of {newest}: its last release is {last}"
        value = {"releases": have, "last": last, "ended": last != newest}
        out[lib] = known(value, seen[last], note=note)
    return out


NOTICE_54 = "docs/main/_notices/rsn0054.md"


def cuda_floor(data: Path) -> dict[str, Any]:
    """The CUDA minimum RAPIDS support notice 54 sets from a release on, held against the
    platform-support table of RAPIDS' docs (CUDA 12's toolkit_min of each release it lists)."""
    notice = Source(data, NOTICE_54)
    hit = notice.find(
        r"minimum required CUDA version .* from ([\d.]+) to ([\d.]+) starting with the "
        r"v(\d+\.\d+) release"
    )
    if hit is None:
        return unknown(f"{NOTICE_54} does not state a CUDA minimum")
    need, since = hit[0].group(2), hit[0].group(3)
    table = Source(data, PLATFORMS)
    agree = []
    for rel, major, low, ptr in _toolkit_mins(table):
        if major != need.split(".")[0] or _key(rel) < _key(since):
            continue
        if low != need:
            raise ValueError(f"{ptr}: RAPIDS {rel} CUDA {major} toolkit_min {low}, not {need}")
        agree.append(ptr)
    notice_id = notice.find(r"^notice_id: (\d+)")
    name = f"RAPIDS support notice {notice_id[0].group(1) if notice_id else '?'}"
    return known(
        {"since": since, "cuda": need, "by": name},
        hit[1],
        *agree,
        note=f"{name}; RAPIDS docs' platform support gives CUDA {need.split('.')[0]} toolkit_min "
        f"{need} for each release it lists from {since} on",
    )


def _toolkit_mins(table: Source) -> list[tuple[str, str, str, str]]:
    """(release, CUDA major, toolkit_min, pointer) of each cuda entry in platform_support.yml."""
    out, rel, major = [], "", ""
    for i, line in enumerate(table.lines, 1):
        if m := re.match(r'^  - version: "(\d+\.\d+)"', line):
            rel = m.group(1)
        elif m := re.match(r"^      - major: (\d+)", line):
            major = m.group(1)
        elif m := re.match(r'^        toolkit_min: "([\d.]+)"', line):
            out.append((rel, major, m.group(1), f"{table.rel}:{i}"))
    return out
