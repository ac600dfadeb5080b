"""Write real conda channels (repodata.json) for tests; the solver reads them like any channel."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# 2024-01-01T00:00:00Z in milliseconds: a fixed build time keeps generated channels reproducible.
DEFAULT_TIMESTAMP_MS = 1_704_067_200_000


def pkg(
    name: str,
    version: str,
    depends: Iterable[str] = (),
    build: str = "0",
    *,
    build_number: int = 0,
    constrains: Iterable[str] = (),
    subdir: str | None = None,
    noarch: str | None = None,
    timestamp: int = DEFAULT_TIMESTAMP_MS,
    **extra: Any,
) -> dict[str, Any]:
    """One repodata record; without subdir it goes to the channel's platform (noarch if noarch)."""
    rec: dict[str, Any] = {
        "name": name,
        "version": version,
        "build": build,
        "build_number": build_number,
        "depends": list(depends),
        "constrains": list(constrains),
        "timestamp": timestamp,
        "license": "BSD-3-Clause",
    }
    if noarch:
        rec["noarch"] = noarch
        rec["subdir"] = "noarch"
    elif subdir:
        rec["subdir"] = subdir
    rec.update(extra)
    return rec


def _filename(rec: dict[str, Any]) -> str:
    return rec.get("fn") or f"{rec['name']}-{rec['version']}-{rec['build']}.tar.bz2"


def _fill(rec: dict[str, Any], subdir: str) -> dict[str, Any]:
    """Complete a record with deterministic hashes and size derived from its file name."""
    out = dict(rec)
    out.setdefault("subdir", subdir)
    out.setdefault("build_number", 0)
    out.setdefault("depends", [])
    out.setdefault("constrains", [])
    out.setdefault("timestamp", DEFAULT_TIMESTAMP_MS)
    key = f"{out['subdir']}/{_filename(rec)}".encode()
    out.setdefault("md5", hashlib.md5(key).hexdigest())
    out.setdefault("sha256", hashlib.sha256(key).hexdigest())
    out.setdefault("size", 1000 + int(hashlib.sha256(key).hexdigest()[:4], 16))
    out.pop("fn", None)
    return out


def write_channel(
    root: Path,
    packages: Iterable[dict[str, Any]],
    subdir: str = "linux-64",
    *,
    info: dict[str, Any] | None = None,
    base_url: str | None = None,
) -> str:
    """Write ``root/<subdir>/repodata.json`` and ``root/noarch/repodata.json``; return the URL.

    Records whose ``subdir`` is ``noarch`` go to noarch, the rest to ``subdir``. ``info`` is merged
    into each repodata's ``info``. ``base_url`` (for example https://conda.anaconda.org/conda-forge)
    makes the solver report record URLs under it (CEP-15 ``info.base_url``, per subdir) instead
    of under the file:// channel, as a snapshot of a real channel needs.
    """
    root = Path(root)
    by_subdir: dict[str, dict[str, dict[str, Any]]] = {subdir: {}, "noarch": {}}
    for rec in packages:
        full = _fill(rec, subdir)
        target = "noarch" if full["subdir"] == "noarch" else subdir
        full["subdir"] = target
        fn = _filename(rec)
        if fn in by_subdir[target]:
            raise ValueError(f"duplicate package file {target}/{fn}")
        by_subdir[target][fn] = full
    for sd, records in by_subdir.items():
        d = root / sd
        d.mkdir(parents=True, exist_ok=True)
        extra = dict(info or {})
        if base_url:
            extra["base_url"] = f"{base_url.rstrip('/')}/{sd}/"
        conda = {fn: r for fn, r in records.items() if fn.endswith(".conda")}
        tarbz = {fn: r for fn, r in records.items() if not fn.endswith(".conda")}
        body = {
            "info": {"subdir": sd, **extra},
            "packages": dict(sorted(tarbz.items())),
            "packages.conda": dict(sorted(conda.items())),
            "removed": [],
            "repodata_version": 1,
        }
        (d / "repodata.json").write_text(json.dumps(body, indent=None, sort_keys=True))
    return root.resolve().as_uri()


def write_recipe(
    tmp_path: Path,
    channel: str,
    deps: str,
    extra: str = "",
    *,
    name: str = "demo",
    platforms: str = "[linux-64]",
    system: str = '{cuda: "11.5", glibc: "2.17"}',
) -> Path:
    """A recipe YAML on one channel; deps, extra keys and system as YAML text."""
    p = tmp_path / f"{name}.yaml"
    p.write_text(
        f"name: {name}\nchannels: ['{channel}']\nplatforms: {platforms}\n"
        f"system: {system}\ndependencies: {deps}\n{extra}"
    )
    return p


def demo_channel(root: Path) -> str:
    """A small RAPIDS-shaped channel: cuml 22.08 pins dask 2022.7.1, newer dask exists too.

    Versions follow rapidsai/integration's versions.yaml for 22.08 (dask ==2022.7.1).
    """
    return write_channel(
        root,
        [
            pkg("python", "3.9.18", ["__glibc >=2.17", "libzlib >=1.2.13,<2"], build="h0_cpython"),
            pkg("python", "3.12.1", ["__glibc >=2.28"], build="h0_cpython"),
            pkg("libzlib", "1.2.13", build="h166bdaf_4"),
            pkg("dask", "2022.7.1", ["python >=3.8", "distributed ==2022.7.1"], noarch="python"),
            pkg("dask", "2023.3.2", ["python >=3.8", "distributed ==2023.3.2"], noarch="python"),
            pkg("distributed", "2022.7.1", ["python >=3.8"], noarch="python"),
            pkg("distributed", "2023.3.2", ["python >=3.8"], noarch="python"),
            pkg("cudatoolkit", "11.5.2", ["__cuda >=11"], build="h0_10"),
            pkg(
                "cuml",
                "22.08.00",
                ["python 3.9.*", "dask ==2022.7.1", "cudatoolkit 11.*"],
                build="cuda11_py39_0",
            ),  # fmt: skip
            pkg(
                "cugraph",
                "22.08.00",
                ["python 3.9.*", "dask ==2022.7.1", "cudatoolkit 11.*"],
                build="cuda11_py39_0",
            ),  # fmt: skip
            pkg(
                "rapids",
                "22.08.00",
                ["cuml 22.08.*", "cugraph 22.08.*", "python 3.9.*"],
                build="cuda11_py39_0",
            ),  # fmt: skip
            pkg("dask-cuda", "22.08.00", ["dask ==2022.7.1", "python >=3.8"], noarch="python"),
            pkg("dask-cuda", "23.04.00", ["dask ==2023.3.2", "python >=3.8"], noarch="python"),
        ],
    )
