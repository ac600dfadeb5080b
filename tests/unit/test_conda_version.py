"""conda_version against py-rattler: the same ordering, the same matches, the same package
specs, on every version and spec the record and the recipes hold and on tricky cases; input it
cannot read as rattler does, it refuses (BadInput)."""

from __future__ import annotations

import functools
import itertools
import json
import re
from pathlib import Path

import pytest
import yaml

from envcheck.errors import BadInput
from envcheck.resolve.record.conda_version import package_spec, parse_version, version_spec

rattler = pytest.importorskip("rattler")

ROOT = Path(__file__).resolve().parents[2]
_SPECISH = re.compile(r"^[\d<>=!~*(][\w.*,|<>=!~+()-]*$")
_NUMS = re.compile(r"(?:\d+!)?[0-9][\w.+-]*?(?=[,|)]|\.\*|\*|$)")

TRICKY_VERSIONS = [
    "1.0dev", "1.0.dev0", "1.0_", "1.0a", "1.0a1", "1.0alpha", "1.0b2", "1.0rc1", "1.0RC2",
    "1.0", "1.0.0", "1.0.0.0", "1.0post", "1.0.post1", "1.0.1", "1.0-1", "1.0_1", "1.1",
    "1!0.5", "2!1.0", "1.0+local", "1.0+local.2", "1.0+2", "0.9", "2.0", "2.0a0", "3.0a0",
    "2.2.4dev0", "12.4", "12.4.1", "12.10", "24.12", "24.12.0", "24.12.01", "2024.11.2",
    "0.41", "0.41.0a", "1.2.3.4.5", "10", "1a", "a", "1.0.dev", "1.0.DEV1", "1.0.rc", "1.0_rc1",
]
TRICKY_PACKAGES = [
    "dask-cuda=22.08.00", "dask-cuda=22.08.00=py39_g9a61ce5_0", "dask-cuda==22.08.*",
    "dask-cuda 22.08.* py39*", "dask-cuda 22.08.00 *_0", "dask-cuda>=22.08,<22.10",
    "dask-cuda=22.08=*py39*", "dask-cuda[version='>=22.08,<22.10',build=py39*]",
    "cudf[version=\">=22.08\"]", "rapidsai::dask-cuda=22.08", "dask-cuda~=22.8.0",
    "cudf=22.08|22.10", "cudf=22.08,<22.10", "cudf=22.08.*=cuda11*", "Cudf_X>=1", "cudf *",
    "pytorch * *cuda*", "cudf=*=cuda11*",
]
TRICKY_SPECS = [
    "1.0", "==1.0", "1.0.*", "1.0*", "=1.0", "==1.0.*", ">=1.0", ">1.0", "<=1.0", "<1.0",
    "!=1.0", "!=1.0.*", "~=1.0", "~=1.0.1", ">=1.0,<2", ">=1.0,<2|3.*", "1.*|>=2,!=2.0.*",
    "!=1.0.*,>=0.9", "<2.0a0", ">=1.0rc1", ">=1.0.dev0,<1.0.post1", "1!0.*", ">=1!0.5",
    "1.0+local", "*", ">=1.0.*", ">1.0.*", "<1.0.*", "<=1.0.*", "(>=1|<0.5),!=1.1",
    "1.0|1.1,1.2", "2.2.*,!=2.2.4", ">= 1.0", "~=1", "1.0.0.*",
    ">=1.0, <2", "1.0 | 2.0", "( >=1.0 , <2 )", "==1.2.*", "<=1.2.*", "1.2 .*", "1.0r.*",
    "1.0rc.*", "1.a.*", "1.0a.*", "0.*", ">=12.0,<13", "12.*",
]


def _strings(node: object):  # type: ignore[no-untyped-def]
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def _recipe_specs() -> list[str]:
    files = [*ROOT.glob("recipes/*.yaml"), *ROOT.glob("tests/data/user-recipes/**/*.yaml"),
             *ROOT.glob("tests/data/seed-recipes/**/*.yaml")]  # fmt: skip
    out = []
    for f in sorted(files):
        doc = yaml.safe_load(f.read_text())
        if isinstance(doc, dict):
            deps = doc.get("dependencies") or []
            out += [d for d in deps if isinstance(d, str)]
            out += [str(v) for v in (doc.get("system") or {}).values()]
    return out


@functools.cache
def corpus() -> tuple[list[str], list[str], list[str]]:
    """(versions, version specs, package specs) of the record, the recipes and TRICKY_*."""
    record = json.loads((ROOT / "envcheck/resolve/record/rapids.json").read_text())
    specs = {s for s in _strings(record) if _SPECISH.match(s)} | set(TRICKY_SPECS)
    packages = _recipe_specs() + TRICKY_PACKAGES
    for p in packages:
        words = re.split(r"[\s=<>!~]+", p, maxsplit=1)
        if len(words) > 1 and words[1]:
            specs.add(p[len(words[0]):].strip().split()[0].lstrip("="))
    versions = set(TRICKY_VERSIONS)
    for s in specs:
        versions |= {m.group(0) for m in _NUMS.finditer(re.sub(r"^[<>=!~]+", "", s))}
        versions |= {m for part in re.split(r"[,|()]", s) for m in
                     [re.sub(r"^[<>=!~ ]+|\.?\*$", "", part)] if m}  # fmt: skip
    return sorted(versions), sorted(specs), packages


def _rattler_version(text: str):  # type: ignore[no-untyped-def]
    try:
        return rattler.Version(text)
    except Exception:  # noqa: BLE001 - rattler raises its own types
        return None


def _readable_versions() -> list[tuple[str, object, object]]:
    out = []
    for v in corpus()[0]:
        theirs = _rattler_version(v)
        try:
            mine = parse_version(v)
        except BadInput:
            mine = None
        if theirs is None:
            assert mine is None, f"{v!r}: rattler refuses it, conda_version reads it"
        elif mine is not None:
            out.append((v, mine, theirs))
    return out


def test_the_corpus_is_large() -> None:
    versions, specs, packages = corpus()
    assert len(versions) > 100 and len(specs) > 60 and len(packages) > 100


def test_version_ordering_agrees_with_rattler() -> None:
    readable = _readable_versions()
    assert len(readable) > 100
    for (a, ma, ra), (b, mb, rb) in itertools.product(readable, repeat=2):
        assert (ma < mb, ma == mb) == (ra < rb, ra == rb), (a, b)


def test_version_specs_match_as_rattler_does() -> None:
    readable = _readable_versions()
    read = 0
    for s in corpus()[1]:
        try:
            theirs = rattler.VersionSpec(s)
        except Exception:  # noqa: BLE001 - rattler raises its own types
            with pytest.raises(BadInput):
                version_spec(s)
            continue
        try:
            mine = version_spec(s)
        except BadInput:
            continue  # refused: never a different answer
        read += 1
        for v, mv, rv in readable:
            assert mine.matches(mv) == theirs.matches(rv), (s, v)
    assert read > 60


def test_package_specs_read_as_rattler_reads_them() -> None:
    from envcheck.resolve.spec import conda_spec

    readable, refused = _readable_versions(), []
    for p in corpus()[2]:
        try:
            theirs = conda_spec(p)
        except ValueError:
            with pytest.raises(BadInput):
                package_spec(p)
            continue
        try:
            mine = package_spec(p)
        except BadInput:
            refused.append(p)  # refused: never a different answer
            continue
        assert mine.name == theirs.name.normalized, p
        assert mine.build == (None if theirs.build in (None, "*") else theirs.build), p
        tv = None if theirs.version in (None, "*") else str(theirs.version)
        assert (mine.version is None) == (tv is None), p
        if tv is not None:
            rs, ms = rattler.VersionSpec(tv), version_spec(mine.version)
            for v, mv, rv in readable:
                assert ms.matches(mv) == rs.matches(rv), (p, v)
    assert len(refused) <= 2, refused


@pytest.mark.parametrize("bad", ["cudf[channel=x]", "cudf[version=1.0]", "cudf 1[build=x]",
                                 "cudf >=1 x y", "cudf=1=2=3", "", "cudf >=1 <2 x",
                                 "cudf=>1"])  # fmt: skip
def test_package_specs_it_refuses(bad: str) -> None:
    with pytest.raises(BadInput):
        package_spec(bad)


_RUN = "import sys; {block}from envcheck.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("args", [
    ["--rapids", "24.12", "--cuda", "12.4", "--os", "el8", "--with", "torch,cupy>=12,ucx 1.15.*"],
    ["--rapids", "22.08", "--cuda", "11.5", "--os", "el7", "--exclude", "cuspatial=22.08"],
    ["--rapids", "26.10", "--cuda", "12.8", "--os", "el9"],
])  # fmt: skip
def test_recipe_new_needs_no_rattler(args: list[str]) -> None:
    """The same recipe text, exit 0, with py-rattler unimportable as with it."""
    import subprocess
    import sys

    out = {}
    for block in ("sys.modules['rattler'] = None; ", ""):
        p = subprocess.run([sys.executable, "-c", _RUN.format(block=block), "recipe", "new", *args],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        assert p.returncode == 0, p.stderr
        out[block] = p.stdout
    assert out[""].startswith("# RAPIDS") and out[""] == out["sys.modules['rattler'] = None; "]
