"""RAPIDS releases from their PyPI wheels: fetch (``--refresh``) and read the kept METADATA.

Kept under tests/data/rapids-record/pypi/:
  index/<project>.tsv   the project's wheels of the releases below, one line each (file name,
                        sha256, Requires-Python, METADATA sha256, URL), from the simple API
                        (``Accept: application/vnd.pypi.simple.v1+json``) and the JSON API
  <wheel>.METADATA      the METADATA of one wheel per project and release
  METADATA.tsv          for each: the wheel URL and sha256, the METADATA sha256, how it came

Only METADATA is fetched, never a wheel: the PEP 658 ``.metadata`` file where the index serves
one, else the METADATA member of the wheel read with HTTP range requests (the zip's central
directory, then that one member), as uv does. Either way its sha256 must equal the one PyPI
publishes for it (``core-metadata``), or the fetch fails.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import sys
import urllib.request
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

SIMPLE = "https://pypi.org/simple"
JSON_API = "https://pypi.org/pypi"
RELEASES = (
    "24.06", "24.08", "24.10", "24.12", "25.02", "25.04", "25.06", "25.08",
    "25.10", "25.12", "26.02", "26.04", "26.06", "26.08", "26.10",
)  # fmt: skip
# METADATA is kept for these (one wheel per release); the -cu11/-cu13 cudf projects are
# indexed only: which CUDA majors a release ships is which of them has its wheels
PROJECTS = (
    "cudf-cu12", "dask-cudf-cu12", "cuml-cu12", "cugraph-cu12", "dask-cuda",
    "rapids-dask-dependency", "pylibraft-cu12", "rmm-cu12",
)  # fmt: skip
# UCXX is versioned 0.NN, not by the release: dask-cuda of a release names its series
# (distributed-ucxx-cu12==0.52.*), libucxx-cu12 of that series the libucx range
UCXX_PROJECTS = ("ucxx-cu12", "libucxx-cu12", "distributed-ucxx-cu12")
UCXX_SERIES = tuple(f"0.{n}" for n in range(38, 53))
CUDA_PROJECTS = {"11": "cudf-cu11", "12": "cudf-cu12", "13": "cudf-cu13"}
# METADATA of every patch release of these is kept (25.12.0 and the 25.12.1 hotfix pin
# different dask versions): the record holds each patch's pins
PATCH_PROJECTS = ("rapids-dask-dependency",)
# indexed only, for their wheels' manylinux tags: the C++ wheels the Python wheels require
# (cudf-cu12 -> pylibcudf-cu12 -> libcudf-cu12), whose glibc floor is the release's
LIB_PROJECTS = (
    "libcudf-cu12", "pylibcudf-cu12", "librmm-cu12", "libraft-cu12", "libcuml-cu12",
    "libcugraph-cu12", "libkvikio-cu12",
)  # fmt: skip
# every file (wheels and sdists) of these is listed under pypi/files/: which releases a
# library has on pypi.org at all, the last one included
FILE_PROJECTS = (
    "cudf-cu12", "dask-cudf-cu12", "cuml-cu12", "cugraph-cu12", "cuspatial-cu12",
    "cuxfilter-cu12", "cucim-cu12", "raft-dask-cu12", "pylibraft-cu12", "rmm-cu12",
    "cuvs-cu12", "nx-cugraph-cu12", "dask-cuda", "cuproj-cu12",
)  # fmt: skip
ARCH = "x86_64"
TIMEOUT = 60


@dataclass(frozen=True)
class Wheel:
    """One line of a kept index."""

    filename: str
    sha256: str
    requires_python: str
    metadata_sha256: str  # "" when PyPI publishes none
    url: str

    @property
    def version(self) -> str:
        return self.filename.split("-")[1]

    @property
    def tags(self) -> tuple[str, str, str]:
        py, abi, plat = self.filename[:-4].split("-")[-3:]
        return py, abi, plat

    @property
    def metadata_name(self) -> str:
        return self.filename[: -len(".whl")] + ".METADATA"

    def row(self) -> str:
        return "\t".join(
            (self.filename, self.sha256, self.requires_python, self.metadata_sha256, self.url)
        )


def series(release: str) -> str:
    """'24.06' -> '24.6.': the prefix of the package versions of that release."""
    yy, mm = release.split(".")
    return f"{int(yy)}.{int(mm)}."


def release_of(version: str) -> str | None:
    """'26.10.2' -> '26.10', '0.52.0' -> '0.52' (a UCXX series); None for what is neither."""
    u = re.match(r"^0\.(\d+)\.\d+$", version)
    if u:
        return f"0.{u.group(1)}" if f"0.{u.group(1)}" in UCXX_SERIES else None
    m = re.match(r"^(\d{2})\.(\d{1,2})\.\d+$", version)
    if not m:
        return None  # pre-releases (26.10.0a3) are not a release's wheels
    rel = f"{m.group(1)}.{int(m.group(2)):02d}"
    return rel if rel in RELEASES else None


def _get(url: str, accept: str = "", rng: str = "") -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "envcheck-rapids-record"})
    if accept:
        req.add_header("Accept", accept)
    if rng:
        req.add_header("Range", rng)
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        body = r.read()
        if rng and r.status != 206:
            raise OSError(f"{url}: the server ignored the Range header (status {r.status})")
        return body


def fetch_index(project: str) -> list[Wheel]:
    """The project's wheels of RELEASES: simple API (URLs, hashes) + JSON API (METADATA hashes)."""
    simple = json.loads(_get(f"{SIMPLE}/{project}/", "application/vnd.pypi.simple.v1+json"))
    meta_hash: dict[str, str] = {}
    for files in json.loads(_get(f"{JSON_API}/{project}/json"))["releases"].values():
        for f in files:
            core = f.get("core-metadata") or f.get("data-dist-info-metadata")
            if isinstance(core, dict) and core.get("sha256"):
                meta_hash[f["filename"]] = core["sha256"]
    out = []
    for f in simple["files"]:
        name = f["filename"]
        if not name.endswith(".whl") or f.get("yanked"):
            continue
        core = f.get("core-metadata") or f.get("data-dist-info-metadata")
        if isinstance(core, dict) and core.get("sha256"):
            meta_hash[name] = core["sha256"]
        w = Wheel(name, f["hashes"]["sha256"], f.get("requires-python") or "",
                  meta_hash.get(name, ""), f["url"])  # fmt: skip
        if release_of(w.version):
            out.append(w)
    return sorted(out, key=lambda w: w.filename)


def _zip_member(url: str, size: int, suffix: str) -> bytes:
    """One member of a remote zip whose name ends with ``suffix``, through range requests."""
    tail = _get(url, rng=f"bytes={max(0, size - 65536)}-{size - 1}")
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise OSError(f"{url}: no zip end record in the last 64 KiB")
    cd_size, cd_offset = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    start = size - len(tail)
    if cd_offset >= start:
        cd = tail[cd_offset - start : cd_offset - start + cd_size]
    else:
        cd = _get(url, rng=f"bytes={cd_offset}-{cd_offset + cd_size - 1}")
    at = 0
    while at < len(cd) and cd[at : at + 4] == b"PK\x01\x02":
        (method,) = struct.unpack("<H", cd[at + 10 : at + 12])
        csize, _usize, nlen, elen, clen = struct.unpack("<IIHHH", cd[at + 20 : at + 34])
        (local,) = struct.unpack("<I", cd[at + 42 : at + 46])
        name = cd[at + 46 : at + 46 + nlen].decode()
        at += 46 + nlen + elen + clen
        if name.count("/") == 1 and name.endswith(f".dist-info/{suffix}"):
            head = _get(url, rng=f"bytes={local}-{local + 30 + 1024 + csize}")
            hn, he = struct.unpack("<HH", head[26:30])
            data = head[30 + hn + he : 30 + hn + he + csize]
            return zlib.decompress(data, -15) if method == 8 else data
    raise OSError(f"{url}: no */.dist-info/{suffix} in the wheel")


def fetch_metadata(w: Wheel) -> tuple[bytes, str]:
    """The wheel's METADATA and how it was read; its sha256 checked against PyPI's."""
    try:
        body, how = _get(w.url + ".metadata"), "PEP 658 .metadata"
    except OSError:
        req = urllib.request.Request(w.url, method="HEAD")
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            size = int(r.headers["Content-Length"])
        body, how = _zip_member(w.url, size, "METADATA"), "zip range requests"
    got = hashlib.sha256(body).hexdigest()
    if w.metadata_sha256 and got != w.metadata_sha256:
        raise OSError(f"{w.filename}: METADATA sha256 {got} is not PyPI's {w.metadata_sha256}")
    return body, how


def chosen(wheels: Sequence[Wheel], release: str) -> Wheel | None:
    """The wheel whose METADATA stands for the release: newest patch, x86_64 (or pure), newest
    CPython tag."""
    mine = [w for w in wheels if release_of(w.version) == release]
    mine = [w for w in mine if ARCH in w.tags[2] or w.tags[2] == "any"]
    if not mine:
        return None

    def key(w: Wheel) -> tuple[tuple[int, ...], int]:
        cp = re.findall(r"cp3(\d+)", w.tags[0])
        return tuple(int(x) for x in w.version.split(".")), int(cp[-1]) if cp else 0

    return max(mine, key=key)


def patch_of(wheels: Sequence[Wheel], wheel: Wheel) -> bool:
    """Whether ``wheel`` is one of several patch releases of its release in ``wheels``."""
    rel = release_of(wheel.version)
    return len({w.version for w in wheels if release_of(w.version) == rel}) > 1


def _index_text(project: str, wheels: Iterable[Wheel]) -> str:
    head = (
        f"# {SIMPLE}/{project}/ (application/vnd.pypi.simple.v1+json; METADATA sha256 from "
        f"{JSON_API}/{project}/json): wheels of RAPIDS {RELEASES[0]}-{RELEASES[-1]} "
        f"(UCXX {UCXX_SERIES[0]}-{UCXX_SERIES[-1]})\n"
        "# filename\tsha256\trequires-python\tmetadata-sha256\turl\n"
    )
    return head + "".join(w.row() + "\n" for w in wheels)


def read_index(data: Path, project: str) -> list[Wheel]:
    path = data / "pypi" / "index" / f"{project}.tsv"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [Wheel(*ln.split("\t")) for ln in lines if ln and not ln.startswith("#")]


def fetch_files(project: str) -> list[tuple[str, str]]:
    """(version, file name) of every file, wheel or sdist, of the project's RELEASES."""
    simple = json.loads(_get(f"{SIMPLE}/{project}/", "application/vnd.pypi.simple.v1+json"))
    out = []
    for f in simple["files"]:
        name = f["filename"]
        if f.get("yanked"):
            continue
        m = re.match(r"^[A-Za-z0-9_.-]+?-(\d[^-]*?)(-|\.tar\.gz$|\.zip$)", name)
        if m and release_of(m.group(1)):
            out.append((m.group(1), name))
    return sorted(out)


def read_files(data: Path, project: str) -> list[tuple[str, str]]:
    """The kept (version, file name) list of ``project`` (pypi/files/<project>.tsv)."""
    path = data / "pypi" / "files" / f"{project}.tsv"
    if not path.exists():
        return []
    rows = [ln.split("\t") for ln in path.read_text().splitlines()]
    return [(r[0], r[1]) for r in rows if r and not r[0].startswith("#")]


def refresh_lists(data: Path) -> None:
    """Fetch the index-only projects (LIB_PROJECTS) and the file lists (FILE_PROJECTS)."""
    root = data / "pypi"
    (root / "index").mkdir(parents=True, exist_ok=True)
    (root / "files").mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(8) as pool:
        indexes = dict(zip(LIB_PROJECTS, pool.map(fetch_index, LIB_PROJECTS), strict=True))
        files = dict(zip(FILE_PROJECTS, pool.map(fetch_files, FILE_PROJECTS), strict=True))
    for project, wheels in indexes.items():
        (root / "index" / f"{project}.tsv").write_text(_index_text(project, wheels))
    for project, rows in files.items():
        head = (
            f"# {SIMPLE}/{project}/ (application/vnd.pypi.simple.v1+json): every file, wheel or "
            f"sdist, of RAPIDS {RELEASES[0]}-{RELEASES[-1]}\n# version\tfilename\n"
        )
        text = head + "".join(f"{v}\t{n}\n" for v, n in rows)
        (root / "files" / f"{project}.tsv").write_text(text)


def refresh(data: Path) -> list[str]:
    """Fetch every index and the METADATA of the chosen wheels into ``data``/pypi."""
    root = data / "pypi"
    (root / "index").mkdir(parents=True, exist_ok=True)
    projects = sorted({*PROJECTS, *UCXX_PROJECTS, *CUDA_PROJECTS.values()})
    with ThreadPoolExecutor(8) as pool:
        indexes = dict(zip(projects, pool.map(fetch_index, projects), strict=True))
    for project, wheels in indexes.items():
        (root / "index" / f"{project}.tsv").write_text(_index_text(project, wheels))
    todo = [w for p in PROJECTS for rel in RELEASES if (w := chosen(indexes[p], rel))]
    todo += [w for p in UCXX_PROJECTS for s in UCXX_SERIES if (w := chosen(indexes[p], s))]
    patches = [w for p in PATCH_PROJECTS for w in indexes[p] if patch_of(indexes[p], w)]
    todo += [w for w in patches if w not in todo]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(fetch_metadata, todo))
    rows = ["# metadata\twheel-url\twheel-sha256\tmetadata-sha256\thow\n"]
    for w, (body, how) in zip(todo, got, strict=True):
        (root / w.metadata_name).write_bytes(body)
        sha = hashlib.sha256(body).hexdigest()
        rows.append(f"{w.metadata_name}\t{w.url}\t{w.sha256}\t{sha}\t{how}\n")
    (root / "METADATA.tsv").write_text("".join(rows))
    refresh_lists(data)
    return [w.metadata_name for w in todo]


if __name__ == "__main__":  # python scripts/record/rapids_pypi.py: refresh only
    sys.path.insert(0, str(Path(__file__).parent))
    from rapids_source import DATA

    print(f"{len(refresh(DATA))} METADATA files in {DATA / 'pypi'}")
