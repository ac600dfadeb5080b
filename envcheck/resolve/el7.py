"""Will it load on RHEL/CentOS 7? The glibc a conda record or a pip wheel needs, against the
recipe's target glibc, naming each offender and the newest version of it that fits.

conda records say it in their depends (``__glibc >=2.28``); wheels in their platform tags
(manylinux2014 = manylinux_2_17; manylinux_2_28 needs glibc 2.28). Pure functions over
records and file names; the catalogues of other versions come from the channels' repodata
and the package index's file list.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from envcheck.inputs import MAX_REPODATA_BYTES, read_bytes
from envcheck.lockfile.names import PLATFORM_ARCH

_GLIBC_DEP = re.compile(r"^__glibc\s*>=\s*([\d.]+)")
_LEGACY = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
_TAG = re.compile(r"^(manylinux1|manylinux2010|manylinux2014|manylinux_(\d+)_(\d+))_(\w+)$")


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def conda_needs(depends: Iterable[str]) -> str | None:
    """The glibc a conda record asks for (``__glibc >=2.28`` -> '2.28'), None if it names none."""
    needs = [m.group(1) for d in depends if (m := _GLIBC_DEP.match(d.strip()))]
    return max(needs, key=_key) if needs else None


def wheel_needs(filename: str, arch: str = "x86_64") -> str | None:
    """The lowest glibc any of a wheel's linux tags for ``arch`` accepts; None if it has none
    (pure Python, another OS or arch)."""
    if not filename.endswith(".whl"):
        return None
    platforms = filename[:-4].split("-")[-1].split(".")
    needs = []
    for p in platforms:
        m = _TAG.match(p)
        if m and m.group(4) == arch:
            needs.append(_LEGACY.get(m.group(1)) or f"{m.group(2)}.{m.group(3)}")
    return min(needs, key=_key) if needs else None


def fits(needs: str | None, glibc: str) -> bool:
    return needs is None or _key(needs) <= _key(glibc)


@dataclass(frozen=True)
class Offender:
    manager: str  # conda / pip
    name: str
    version: str
    needs: str  # glibc
    why: str  # "__glibc >=2.28" or the wheel's tag
    newest_fitting: str | None  # None: none known to fit (or no catalogue)

    def line(self, glibc: str) -> str:
        fit = (
            f"newest that fits glibc {glibc}: {self.name} {self.newest_fitting}"
            if self.newest_fitting
            else "no version known to fit"
        )
        head = f"{self.name} {self.version} ({self.manager}) needs glibc {self.needs}"
        return f"{head} ({self.why}); {fit}"


# catalogue: name -> [(version, glibc it needs or None)]
Catalogue = Mapping[str, Sequence[Tuple[str, Optional[str]]]]


def newest_fitting(name: str, glibc: str, catalogue: Catalogue) -> str | None:
    ok = [v for v, needs in catalogue.get(name, ()) if fits(needs, glibc)]
    return max(ok, key=_key) if ok else None


def offenders(
    glibc: str,
    conda: Iterable[tuple[str, str, Sequence[str]]] = (),
    wheels: Iterable[tuple[str, str, str]] = (),
    conda_catalogue: Catalogue | None = None,
    pip_catalogue: Catalogue | None = None,
    arch: str = "x86_64",
) -> list[Offender]:
    """conda: (name, version, depends); wheels: (name, version, file name)."""
    out = []
    for name, version, depends in conda:
        needs = conda_needs(depends)
        if not fits(needs, glibc):
            newest = newest_fitting(name, glibc, conda_catalogue or {})
            out.append(Offender("conda", name, version, needs or "", f"__glibc >={needs}", newest))
    for name, version, filename in wheels:
        needs = wheel_needs(filename, arch)
        if not fits(needs, glibc):
            tag = filename[:-4].split("-")[-1]
            newest = newest_fitting(name, glibc, pip_catalogue or {})
            out.append(Offender("pip", name, version, needs or "", f"wheel tag {tag}", newest))
    return out


def repodata_catalogue(channel_dirs: Iterable[Path], subdirs: Sequence[str]) -> dict:
    """name -> [(version, glibc needs)] from local channels' repodata.json."""
    cat: dict[str, list[tuple[str, str | None]]] = {}
    for root in channel_dirs:
        for sd in subdirs:
            path = Path(root) / sd / "repodata.json"
            if not path.is_file():
                continue
            data = json.loads(read_bytes(path, "channel repodata", MAX_REPODATA_BYTES))
            for key in ("packages", "packages.conda"):
                for rec in data.get(key, {}).values():
                    cat.setdefault(rec["name"], []).append(
                        (rec["version"], conda_needs(rec.get("depends", ())))
                    )
    return cat


def wheel_catalogue(
    name: str, filenames: Iterable[str], arch: str = "x86_64", python: str | None = None
) -> dict:
    """name -> [(version, lowest glibc among its linux wheels)] from an index's file names;
    with ``python`` ('3.12'), only wheels for that CPython (or any Python 3)."""
    by_version: dict[str, list[str | None]] = {}
    prefix = name.replace("-", "_").lower() + "-"
    cp = f"cp{python.replace('.', '')}" if python else None
    for fn in filenames:
        if not fn.lower().startswith(prefix) or not fn.endswith(".whl"):
            continue
        parts = fn[:-4].split("-")
        if cp and not ({cp, "py3"} & set(parts[-3].split("."))):
            continue
        version = fn.split("-")[1]
        needs = wheel_needs(fn, arch)
        if needs is not None:
            by_version.setdefault(version, []).append(needs)
    return {
        name: [(v, min(ns, key=_key)) for v, ns in by_version.items() if ns]  # type: ignore[type-var]
    }


def index_filenames(name: str, index_url: str, timeout: float = 10) -> list[str] | None:
    """The file names a simple index (PEP 691 JSON or PEP 503 HTML) lists for a project;
    None when it cannot be read (then no newest fitting version is named)."""
    import urllib.request
    from html.parser import HTMLParser

    url = f"{index_url.rstrip('/')}/{name}/"
    req = urllib.request.Request(
        url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            kind, body = r.headers.get("Content-Type", ""), r.read().decode()
    except (OSError, ValueError):
        return None
    if "json" in kind:
        return [f["filename"] for f in json.loads(body).get("files", [])]
    names: list[str] = []

    class _Anchors(HTMLParser):
        def handle_data(self, data: str) -> None:
            if data.strip().endswith((".whl", ".tar.gz", ".zip")):
                names.append(data.strip())

    _Anchors().feed(body)
    return names


def check_solution(
    glibc: str,
    platform: str,
    conda: Iterable[tuple[str, str, Sequence[str]]],
    wheels: Iterable[tuple[str, str, str]],
    channel_dirs: Sequence[Path],
    index_url: str | None,
    python: str | None = None,
) -> list[Offender]:
    """Offenders of a solved platform, with the newest fitting version of each where known."""
    arch = PLATFORM_ARCH.get(platform)
    if arch is None:
        return []
    conda, wheels = list(conda), list(wheels)
    found = offenders(glibc, conda, wheels, arch=arch)
    if not found:
        return []
    conda_cat = repodata_catalogue(channel_dirs, [platform, "noarch"])
    pip_cat: dict = {}
    for o in found:
        if o.manager == "pip" and index_url:
            files = index_filenames(o.name, index_url) or []
            pip_cat.update(wheel_catalogue(o.name, files, arch, python))
    return offenders(glibc, conda, wheels, conda_cat, pip_cat, arch)


def blocked_entries(entries: Iterable[str], glibc: str, catalogue: Catalogue) -> list[str]:
    """Recipe entries every matching record of which needs a newer glibc than the target's."""
    from rattler import MatchSpec, Version, VersionSpec

    out = []
    for entry in entries:
        m = MatchSpec(entry)
        name = m.name.normalized
        spec = VersionSpec(m.version) if m.version not in (None, "*") else None
        admitted = [
            (v, n) for v, n in catalogue.get(name, ()) if spec is None or spec.matches(Version(v))
        ]
        if not admitted or any(fits(n, glibc) for _, n in admitted):
            continue
        needs = min((n for _, n in admitted if n), key=_key)
        newest = newest_fitting(name, glibc, catalogue)
        fit = f"{name} {newest}" if newest else "none in the channels"
        out.append(
            f"recipe entry {entry!r}: every {name} it admits needs glibc >= {needs} "
            f"(__glibc in its depends), the target has {glibc}; newest that fits: {fit}"
        )
    return out


def unfit_wheels(
    name: str,
    version: str,
    filenames: Sequence[str],
    glibc: str,
    platform: str,
    python: str,
    index_filenames_of: Callable[[str], Sequence[str] | None],
) -> Offender | None:
    """A resolved version whose linux wheels all need a newer glibc: the offender, with the
    newest version whose wheels fit (from the index's file list)."""
    arch = PLATFORM_ARCH.get(platform)
    if arch is None:
        return None
    needs = [n for fn in filenames if (n := wheel_needs(fn, arch))]
    if not needs or any(fits(n, glibc) for n in needs):
        return None
    lowest = min(needs, key=_key)
    tag = next(fn[:-4].split("-")[-1] for fn in filenames if wheel_needs(fn, arch) == lowest)
    files = index_filenames_of(name) or []
    newest = newest_fitting(name, glibc, wheel_catalogue(name, files, arch, python))
    return Offender("pip", name, version, lowest, f"wheel tag {tag}", newest)
