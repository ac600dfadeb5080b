"""Turn a real conda-lock file into a local conda channel that re-solves to the same packages.

Conda channels cannot be reached from every machine that builds locks. A conda-lock file
holds, for each package, its real URL, md5, sha256 and dependencies: enough to write a
repodata.json per channel and subdir whose records resolve to those exact files. The
channel's ``info.base_url`` (CEP-15) points at the real channel, so a lock solved against
the snapshot carries the real download URLs.

What the lock does not hold is left out rather than invented: ``constrains``, ``size``,
``timestamp``, ``license`` and ``noarch`` (the installer reads the real one from the
package). ``build_number`` is read from the build string's trailing number, where conda
puts it. A lock may record depends that its own packages do not satisfy (conda-lock keeps
a package's depends as built, while the solver saw the channel's later repodata patches);
``inconsistencies`` lists them, and they stay as recorded.

    python -m tests.support.snapshot LOCKFILE OUTDIR   # prints one file:// URL per channel
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from envcheck.errors import BadInput
from envcheck.lockfile.document import load_document

_EXTENSIONS = (".conda", ".tar.bz2")
_BUILD_NUMBER = re.compile(r"_(\d+)$")


@dataclass(frozen=True)
class SnapshotRecord:
    """One conda package of the lock, as a repodata record under its real channel."""

    channel: str  # https://conda.anaconda.org/conda-forge
    subdir: str
    filename: str
    record: Mapping[str, Any]


def depends_from_lock(dependencies: Mapping[str, str]) -> list[str]:
    """conda-lock's {name: spec} back into conda match specs ('python 3.10.* *_cp310').

    conda-lock splits each repodata depends entry at its first space into name and the
    rest (version and, when present, build), so joining with one space restores it.
    """
    out = []
    for name, spec in dependencies.items():
        spec = (spec or "").strip()
        out.append(f"{name} {spec}" if spec else name)
    return sorted(out)


def split_url(url: str, name: str, version: str) -> tuple[str, str, str, str]:
    """(channel URL, subdir, filename, build string) of a package URL.

    The filename is ``{name}-{version}-{build}{.conda|.tar.bz2}``; a URL that does not
    have that shape is an error, because the build string would have to be guessed.
    """
    parsed = urlparse(url)
    parts = parsed.path.rstrip("/").split("/")
    if len(parts) < 3:
        raise BadInput(f"package URL {url} has no channel/subdir/file path")
    filename, subdir = parts[-1], parts[-2]
    stem = next((filename[: -len(e)] for e in _EXTENSIONS if filename.endswith(e)), None)
    prefix = f"{name}-{version}-"
    if stem is None or not stem.startswith(prefix) or len(stem) == len(prefix):
        raise BadInput(f"package URL {url} is not {prefix}<build>.conda or .tar.bz2")
    channel = f"{parsed.scheme}://{parsed.netloc}{'/'.join(parts[:-2])}"
    return channel, subdir, filename, stem[len(prefix) :]


def _parse_lock(lock_path: Path):
    """conda-lock's own models over envcheck's document loader (conda-lock's is 5x slower)."""
    from conda_lock.lockfile import Lockfile, LockfileV1, lockfile_v1_to_v2

    try:
        text = Path(lock_path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"lock file {lock_path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"lock file {lock_path} cannot be read: {e}") from None
    try:
        content = load_document(text, libyaml_errors=True)
        version = content.pop("version", None) if isinstance(content, dict) else None
        if version == 1:
            return lockfile_v1_to_v2(LockfileV1.model_validate(content))
        if version == 2:
            return Lockfile.model_validate(content)
    except Exception as e:  # yaml/pydantic errors: a bad lock, said in one line
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise BadInput(f"{lock_path} is not a conda-lock file: {first}") from None
    raise BadInput(f"{lock_path} is not a conda-lock file of version 1 or 2")


def snapshot_records(lock_path: Path) -> list[SnapshotRecord]:
    """The conda packages of a conda-lock file (any platform) as repodata records."""
    lockfile = _parse_lock(lock_path)
    out: list[SnapshotRecord] = []
    seen: dict[tuple[str, str, str], str] = {}
    for p in lockfile.package:
        if p.manager != "conda":
            continue  # pip packages live on PyPI, not in a conda channel
        if not p.hash.md5:
            raise BadInput(f"{lock_path}: {p.name} {p.version} has no md5")
        channel, subdir, filename, build = split_url(p.url, p.name, p.version)
        m = _BUILD_NUMBER.search(build)
        record: dict[str, Any] = {
            "name": p.name,
            "version": p.version,
            "build": build,
            "build_number": int(m.group(1)) if m else 0,
            "depends": depends_from_lock(p.dependencies),
            "md5": p.hash.md5,
            "subdir": subdir,
        }
        if p.hash.sha256:
            record["sha256"] = p.hash.sha256
        key = (channel, subdir, filename)
        if key in seen:
            # the same file listed for two platforms (noarch): identical content is fine
            if seen[key] != p.hash.md5:
                raise BadInput(f"{lock_path}: {filename} appears twice with different md5")
            continue
        seen[key] = p.hash.md5
        out.append(SnapshotRecord(channel, subdir, filename, record))
    return out


def inconsistencies(records: Sequence[SnapshotRecord]) -> list[str]:
    """Depends of the lock's packages that the lock's own packages do not satisfy."""
    from rattler import MatchSpec, Version, VersionSpec

    by_name: dict[str, Mapping[str, Any]] = {}
    for r in records:
        by_name.setdefault(r.record["name"], r.record)
    problems = []
    for r in records:
        rec = r.record
        for dep in rec["depends"]:
            ms = MatchSpec(dep)
            name = ms.name.normalized if ms.name else dep.split()[0]
            if name.startswith("__"):
                continue  # virtual packages come from the target system, not the lock
            have = by_name.get(name)
            who = f"{rec['name']} {rec['version']} requires {dep}"
            if have is None:
                problems.append(f"{who}, which the lock does not hold")
                continue
            ok = ms.version is None or VersionSpec(str(ms.version)).matches(
                Version(str(have["version"]))
            )
            if ok and ms.build is not None:
                ok = fnmatch.fnmatchcase(str(have["build"]), str(ms.build))
            if not ok:
                problems.append(f"{who}, but the lock holds {have['version']} {have['build']}")
    return problems


def _channel_dirname(channel: str) -> str:
    """conda-forge for https://conda.anaconda.org/conda-forge; a safe name otherwise."""
    last = channel.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]", "_", last) or "channel"


def write_snapshot(
    lock_path: Path, out_dir: Path, platforms: Sequence[str] | None = None
) -> list[str]:
    """Write one local channel per channel of the lock under ``out_dir``; return file:// URLs.

    Output is byte-for-byte reproducible (sorted, no timestamps), so the sha256 of each
    repodata.json that a lock's metadata records can be checked by rebuilding the snapshot.
    """
    lock_path = Path(lock_path)
    records = snapshot_records(lock_path)
    if not records:
        raise BadInput(f"{lock_path} holds no conda packages")
    by_channel: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for r in records:
        by_channel.setdefault(r.channel, {}).setdefault(r.subdir, {})[r.filename] = dict(r.record)
    urls = []
    used: dict[str, str] = {}
    for channel in sorted(by_channel):
        name = _channel_dirname(channel)
        if name in used:  # two channels ending in the same name: keep both apart
            name = f"{name}-{hashlib.sha256(channel.encode()).hexdigest()[:8]}"
        used[name] = channel
        root = Path(out_dir) / name
        subdirs = dict(by_channel[channel])
        for sd in [*(platforms or []), "noarch"]:
            subdirs.setdefault(sd, {})
        for sd, files in subdirs.items():
            body = {
                "info": {
                    "subdir": sd,
                    "base_url": f"{channel}/{sd}/",
                    "envcheck_snapshot_of": lock_path.name,
                },
                "packages": {f: r for f, r in sorted(files.items()) if f.endswith(".tar.bz2")},
                "packages.conda": {f: r for f, r in sorted(files.items()) if f.endswith(".conda")},
                "removed": [],
                "repodata_version": 2,
            }
            d = root / sd
            d.mkdir(parents=True, exist_ok=True)
            text = json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"
            (d / "repodata.json").write_text(text, encoding="utf-8")
        urls.append(root.resolve().as_uri())
    return urls


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m tests.support.snapshot LOCKFILE OUTDIR", file=sys.stderr)
        return 4
    try:
        for url in write_snapshot(Path(args[0]), Path(args[1])):
            print(url)
        for problem in inconsistencies(snapshot_records(Path(args[0]))):
            print(f"envcheck: note: {problem}", file=sys.stderr)
    except BadInput as e:
        print(f"envcheck: {e.message}", file=sys.stderr)
        return int(e.exit_code)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
