"""Reading lock files into ``model``'s values: one document loader, three readers over it.

* ``load_document``: the data a conda-lock file holds, exactly as PyYAML's safe loader gives
  it. conda-lock's own layout (its writer's and envcheck's) is read line by line (0.04 s for
  5,000 packages, against 4.7 s for PyYAML's pure-Python loader); any other layout falls back
  to PyYAML (libyaml's parser where there is one). A test holds the two paths equal.
* ``read_packages``: the packages, for verify (Python 3.8, standard library and PyYAML).
* ``read_lock`` / ``read_lockfile_model``: envcheck's metadata too, validated by conda-lock's
  models (build extra, imported when called).
* ``packages_from_rows``: the packages of one platform of a conda-lock file or a pixi.lock as
  py-rattler read it (``rattler_read``: install extra).
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.inputs import MAX_LOCK_BYTES, read_text
from envcheck.lockfile.model import (
    META,
    Exclusion,
    Lock,
    LockedPackage,
    build_from_url,
    virtual_constraints,
)
from envcheck.lockfile.names import normalize_name

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


# --- the document ---------------------------------------------------------------------------


class _Unrecognised(Exception):
    """The text is not in conda-lock's fixed layout: PyYAML reads it."""


@contextmanager
def _no_gc() -> Iterator[None]:
    """No cyclic GC while a load builds its many acyclic dicts.

    Collections triggered by the allocations alone cost more than the load. Nothing is frozen
    afterwards: the API runs in long-lived processes (notebooks), where gc.freeze() would keep
    every cycle alive at that moment for good.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_document(text: str, *, libyaml_errors: bool = False) -> Any:
    """What ``yaml.safe_load(text)`` returns, fast for conda-lock's layout; yaml errors as it.

    A broken file's error comes from PyYAML's pure-Python parser (the words verify has
    always printed), or from libyaml's with ``libyaml_errors`` (the words build printed).
    """
    with _no_gc():
        doc = fast_document(text)
        return _yaml_document(text, libyaml_errors) if doc is None else doc


def _yaml_document(text: str, libyaml_errors: bool) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
        except yaml.YAMLError:
            if libyaml_errors:
                raise
    return yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the safe loader


_OUTSIDE = re.compile(r"^(?:---|\.\.\.|%)", re.M)  # document markers, directives
_ODD_CHARS = re.compile("[\t\r\x85\u2028\u2029\ufeff]")  # tabs, other line breaks, BOM
_AFTER_RECORDS = re.compile(r"\n(?!- |  )")  # the first line that is not part of a record
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\Z")
_QUOTED = re.compile(r"'((?:[^']|'')*)'\Z")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


def fast_document(text: str) -> dict[Any, Any] | None:
    """The document of a conda-lock file in conda-lock's layout; None for any other layout.

    conda-lock writes top-level keys (comments, version, metadata) and ``package:`` with its
    records as ``- key: value`` / ``  key: value`` lines, one nested level deep (``hash:``,
    ``dependencies:``). The top-level keys go to PyYAML (a few lines); the records are
    split here.
    """
    import yaml

    at = text.find("\npackage:\n")
    if at < 0 or not _plain_characters(text):
        return None
    start = at + len("\npackage:\n")
    after = _AFTER_RECORDS.search(text, start - 1)
    end = len(text) if after is None else after.start() + 1
    rest = text[: at + 1] + text[end:]
    if _OUTSIDE.search(rest) or end == start or text[end : end + 1] in (" ", "\n", "-"):
        return None  # no records, or what follows them is not a plain top-level key
    try:
        packages = _records(text[start:end])
        doc = yaml.load(rest, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except (_Unrecognised, yaml.YAMLError):
        return None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict) or "package" in doc:
        return None
    doc["package"] = packages
    return doc


def _plain_characters(text: str) -> bool:
    """No character PyYAML refuses, and no tab, BOM or line break other than newline."""
    import yaml

    flat = text.replace("\n", "")
    if flat.isascii() and flat.isprintable():  # the usual lock: one quick pass
        return True
    return not (_ODD_CHARS.search(text) or yaml.reader.Reader.NON_PRINTABLE.search(text))


class _Scalars(dict):  # type: ignore[type-arg]
    """text -> its value, each distinct scalar resolved once (most recur: specs, platforms)."""

    def __missing__(self, text: str) -> Any:
        value = self[text] = _scalar(text)
        return value


class _Keys(dict):  # type: ignore[type-arg]
    def __missing__(self, text: str) -> Any:
        if not _KEY.match(text):
            raise _Unrecognised(text)
        value = self[text] = _scalar(text)
        return value


def _records(body: str) -> list[dict[Any, Any]]:
    """``- key: value`` records with one nested mapping level; _Unrecognised for anything else.

    ``{}`` and ``[]`` are made anew each time, as PyYAML makes them.
    """
    keys, values = _Keys(), _Scalars()
    records: list[dict[Any, Any]] = []
    record: dict[Any, Any] = {}
    nested: dict[Any, Any] | None = None  # the mapping a "key:" line opened
    opened: Any = None  # its key
    lines = body.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline
    for line in lines:
        if line[:4] == "    ":
            key, colon, text = line[4:].partition(": ")
            if nested is None or not colon:
                raise _Unrecognised(line)
            value = values[text]
            nested[keys[key]] = value.__class__() if value.__class__ in _NEW else value
            continue
        if nested is not None and not nested:
            record[opened] = None  # "key:" with nothing under it is null
        nested = None
        if line[:2] == "- ":
            record = {}
            records.append(record)
        elif line[:2] != "  " or not records:
            raise _Unrecognised(line)
        key, colon, text = line[2:].partition(": ")
        if colon:
            value = values[text]
            record[keys[key]] = value.__class__() if value.__class__ in _NEW else value
        elif key[-1:] == ":":
            opened = keys[key[:-1]]
            nested = record[opened] = {}
        else:
            raise _Unrecognised(line)
    if nested is not None and not nested:
        record[opened] = None
    return records


_NEW = (dict, list)


def _scalar(text: str) -> Any:
    """One block-context scalar as PyYAML resolves it: str, bool, None, {} or [] only."""
    import yaml

    if not text:
        raise _Unrecognised(text)
    first = text[0]
    if first == "'":
        m = _QUOTED.match(text)
        if m is None:
            raise _Unrecognised(text)
        return m.group(1).replace("''", "'")
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if first in _INDICATORS or text[-1] in " :" or ": " in text or " #" in text:
        raise _Unrecognised(text)
    for tag, regexp in yaml.SafeLoader.yaml_implicit_resolvers.get(first, ()):
        if regexp.match(text):
            if tag == "tag:yaml.org,2002:bool":
                return yaml.SafeLoader.bool_values[text.lower()]
            if tag == "tag:yaml.org,2002:null":
                return None
            raise _Unrecognised(text)  # numbers, dates: rare in a lock, PyYAML builds them
    return text


# --- verify: the packages, standard library and PyYAML -------------------------------------


def read_packages(path: Path) -> tuple[LockedPackage, ...]:
    """Packages of a conda-lock file (v1 or v2); BadInput with one line when it is not one.

    Not conda-lock's models: verify runs inside old environments (Python 3.8, no conda-lock),
    and it needs only these fields of each package.
    """
    import yaml

    text = read_text(path, "lock file", MAX_LOCK_BYTES)
    try:
        data = load_document(text)
    except (RecursionError, yaml.YAMLError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise BadInput(f"{path}: not a readable conda-lock file ({first})") from e
    try:
        locked = tuple(_locked(i, p) for i, p in enumerate(_package_list(data)))
    except ValueError as e:
        raise BadInput(f"{path}: not a readable conda-lock file ({e})") from None
    if not locked:
        raise BadInput(f"{path}: the lock lists no packages (an empty lock checks nothing)")
    for p in locked:
        _check_virtual(path, p.name, dict(p.virtual))
    return locked


def _package_list(data: object) -> list[Any]:
    if not isinstance(data, dict) or "package" not in data or "metadata" not in data:
        raise ValueError("no 'metadata' and 'package' sections")
    if data.get("version") not in (1, 2):
        raise ValueError(f"unsupported lock version {data.get('version')!r}")
    packages = data["package"]
    if not isinstance(packages, list):
        raise ValueError("'package' is not a list")
    return packages


def locked_package(
    name: str,
    version: str,
    manager: str,
    platform: str,
    url: str,
    build: str | None,
    dependencies: dict[Any, Any],
    md5: str | None = None,
    sha256: str | None = None,
) -> LockedPackage:
    """The one way a record becomes a LockedPackage, whichever reader parsed it."""
    build = build or ""
    if manager == "conda" and not build:
        build = build_from_url(url)
    return LockedPackage(
        # pip names compare PEP 503-normalised; conda names are canonical as written
        normalize_name(name) if manager == "pip" else name,
        version,
        build,
        manager,
        platform,
        virtual_constraints(dependencies),
        url,
        md5,
        sha256,
    )


def _locked(index: int, dep: object) -> LockedPackage:
    if not isinstance(dep, dict):
        raise ValueError(f"package[{index}] is not a mapping")
    for key in ("name", "version", "manager", "platform", "url"):
        if not isinstance(dep.get(key), (str, int, float)) or dep.get(key) == "":
            raise ValueError(f"package[{index}]: field '{key}' missing or empty")
    manager = str(dep["manager"])
    if manager not in ("conda", "pip"):
        raise ValueError(f"package[{index}]: manager {manager!r} is neither conda nor pip")
    deps = dep.get("dependencies") or {}
    if not isinstance(deps, dict):
        raise ValueError(f"package[{index}]: 'dependencies' is not a mapping")
    hashes = dep.get("hash")
    md5, sha256 = (
        (hashes.get("md5"), hashes.get("sha256")) if isinstance(hashes, dict) else ("", "")
    )
    return locked_package(
        str(dep["name"]),
        str(dep["version"]),
        manager,
        str(dep["platform"]),
        str(dep["url"]),
        str(dep.get("build") or ""),
        deps,
        str(md5) if md5 else None,
        str(sha256) if sha256 else None,
    )


# one clause of a conda version spec: an optional operator, then a version that starts with a
# digit (`>=2.17`, `2.17.*`, `<3.0.a0`) or `*`
_SPEC_CLAUSE = re.compile(r"\s*(?:(?:>=|<=|==|!=|~=|>|<|=)\s*)?(?:[0-9][0-9A-Za-z._+*]*|\*)\s*")


def _check_virtual(path: Path, name: str, deps: dict[str, str]) -> None:
    """A record's __glibc / __cuda constraint must be a version spec ('banana' is not one)."""
    for key in ("__glibc", "__cuda", "__linux"):
        if key not in deps:
            continue
        spec = str(deps[key])  # '' (any version) is what conda-lock writes for a bare name
        clauses = re.split(r"[,|]", spec)
        if spec.strip() not in ("", "None") and not all(map(_SPEC_CLAUSE.fullmatch, clauses)):
            raise BadInput(f"{path}: {name} needs {key} {spec!r}, which is not a version spec")


# --- build: envcheck's metadata too, through conda-lock's models ---------------------------


def parse_lockfile(path: Path) -> Any:
    """What conda-lock's ``parse_conda_lock_file`` returns, from ``load_document``'s data.

    The same steps (version check, its models, toposort) without PyYAML's pure-Python
    parser: a test compares the two models.
    """
    from envcheck.lockfile.condalock import conda_lock_ready
    from envcheck.lockfile.toposort import toposorted

    conda_lock_ready()
    from conda_lock.lockfile import (
        Lockfile,
        LockfileV1,
        MissingLockfileVersion,
        UnknownLockfileVersion,
        lockfile_v1_to_v2,
    )

    content = load_document(path.read_text(), libyaml_errors=True)
    if not isinstance(content, dict):
        raise ValueError("not a mapping")
    version = content.pop("version", None)
    if version == 1:
        lockfile = lockfile_v1_to_v2(LockfileV1.model_validate(content))
    elif version == 2:
        lockfile = Lockfile.model_validate(content)
    elif version is None:
        raise MissingLockfileVersion(f"{path} is missing a version")
    else:
        raise UnknownLockfileVersion(f"{path} has unknown version {version}")
    lockfile.package = toposorted(lockfile.package)  # conda-lock's order, linear
    return lockfile


def read_lockfile_model(path: Path) -> Any:
    """conda-lock's own model of a lock file; BadInput if unreadable."""
    try:
        return parse_lockfile(path)
    except FileNotFoundError:
        raise BadInput(f"lock {path} does not exist") from None
    except Exception as e:  # yaml errors, pydantic validation, unknown versions
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{path} is not a readable conda-lock file: {first}") from None


_VP_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")  # __cuda, __glibc, __linux: numbers


def _check_virtual_packages(path: Path, vps: Any) -> None:
    """The recorded virtual packages are versions (a hand-edited `__glibc: banana` is not)."""
    if not isinstance(vps, dict):
        raise BadInput(f"{path}: envcheck metadata is damaged (virtual_packages is not a mapping)")
    for platform, packages in vps.items():
        if not isinstance(packages, dict):
            raise BadInput(f"{path}: envcheck metadata is damaged (virtual_packages.{platform})")
        for name, version in packages.items():
            if name in ("__cuda", "__glibc", "__linux") and not (
                isinstance(version, str) and _VP_VERSION.match(version)
            ):
                raise BadInput(
                    f"{path}: virtual package {name} {version!r} ({platform}) is not a version"
                )


def read_lock(path: Path) -> Lock:
    """Read a conda-lock file written by envcheck build; BadInput if it is missing or not one."""

    lf = read_lockfile_model(path)
    custom = lf.metadata.custom_metadata or {}
    if f"{META}recipe_hash" not in custom:
        raise BadInput(f"{path} was not written by envcheck build (no recipe hash in metadata)")
    try:
        vps = json.loads(custom.get(f"{META}virtual_packages", "{}"))
        excl = tuple(
            Exclusion(e["name"], e["reason"]) for e in json.loads(custom[f"{META}exclude"])
        )
        data = tuple(json.loads(custom.get(f"{META}channel_data", "[]")))
    except (KeyError, TypeError, ValueError) as e:
        raise BadInput(f"{path}: envcheck metadata is damaged ({e})") from None
    _check_virtual_packages(path, vps)
    packages = tuple(
        locked_package(
            p.name,
            p.version,
            p.manager,
            p.platform,
            p.url,
            p.build,
            p.dependencies,
            p.hash.md5,
            p.hash.sha256,
        )  # fmt: skip
        for p in lf.package
    )
    return Lock(
        path=path,
        recipe=custom.get(f"{META}recipe", ""),
        recipe_hash=custom[f"{META}recipe_hash"],
        platforms=tuple(lf.metadata.platforms),
        channels=tuple(c.url for c in lf.metadata.channels),
        virtual_packages=vps,
        exclusions=excl,
        channel_data=data,
        packages=packages,
    )


# --- install: one platform as py-rattler read it (rattler_read.py) -------------------------


def packages_from_rows(rows: list[list[Any]], platform: str) -> tuple[LockedPackage, ...]:
    """The packages of ``rattler_read``'s rows, for ``platform``."""
    out = []
    for manager, name, version, url, build, depends, md5, sha256 in rows:
        deps = dict(d.split(" ", 1) if " " in d else (d, "") for d in depends)
        out.append(locked_package(name, version, manager, platform, url, build, deps, md5, sha256))
    return tuple(out)
