"""`recipe new --with ucx`: the release's UCX packages as the record has them, with their
sources, and one header line where a recipe cannot have them (no UCX in the record; UCXX
series pypi.org has no wheels of, 24.06-25.06: conda only)."""

from __future__ import annotations

from envcheck.resolve.record.table import Release, Value
from envcheck.text import without_suffix


def cite(v: Value) -> str:
    """'a/b.yaml:16,17; c.yaml:3': pointers grouped by file."""
    if not v.sources:
        return v.note or "no source"
    files: dict[str, list[str]] = {}
    for s in v.sources:
        path, _, line = s.rpartition(":") if s.rpartition(":")[2] else (s, "", "")
        if not path or " " in path:
            files.setdefault(s, [])
            continue
        files.setdefault(path, []).append(line)
    return "; ".join(f"{p}:{','.join(ls)}" if ls else p for p, ls in files.items())


def ucx_lines(release: Release) -> tuple[list[tuple[str, str]], list[str]]:
    """(conda entries with their comments, header lines) for ``--with ucx``: ucx in the
    release's range, ucx-proc, ucx-py and distributed-ucxx of the release's series."""
    deps: list[tuple[str, str]] = []
    ucx, proc = release.get("ucx"), release.get("ucx-proc")
    if ucx.known:
        deps.append((f"ucx{ucx.value}", cite(ucx)))
    if proc.known:
        deps.append((f"ucx-proc {proc.value}", cite(proc)))
    for comm in ("ucx-py", "distributed-ucxx"):
        v = release.get(comm)
        if v.known:
            deps.append((f"{comm}={without_suffix(str(v.value), '.*')}", f"{cite(v)}; {v.note}"))
    if not deps:
        return [], [f"--with ucx: the record has no UCX package of RAPIDS {release.version}: "
                    "none written."]  # fmt: skip
    pip = release.facts.get("distributed-ucxx_pip")
    if pip is not None and not pip.known:
        return deps, [f"--with ucx writes conda packages; pip has none: {pip.note}."]
    return deps, []
