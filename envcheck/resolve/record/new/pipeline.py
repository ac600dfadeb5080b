"""envcheck recipe new: write a recipe whose every pin comes from the RAPIDS release record.

Combinations the record rules out (RAPIDS 24.06+ on glibc 2.17, a Python the release was not
built for, a CUDA major it does not ship) are refused with the rule and its source; no solver
is started.

The pipeline: Options (options.py) -> recipe_new() -> Report; the flags are command.py.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envcheck.errors import BadInput, EnvcheckError, Unsolvable
from envcheck.resolve.record.conda_version import package_spec
from envcheck.resolve.record.cuda import runnable, toolkit_min
from envcheck.resolve.record.finding import Finding
from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.new.options import LIBS, OSES, Options
from envcheck.resolve.record.new.ucx import cite, ucx_lines
from envcheck.resolve.record.refusal import nearest, refusal_line, short_reason, version_key
from envcheck.resolve.record.table import (
    Record,
    Release,
    Value,
    is_release,
    load_record,
    release_key,
)
from envcheck.text import shown

if TYPE_CHECKING:
    from envcheck.report import Report

LIBS_OLD = (*LIBS, "cusignal")  # cusignal is a member of the meta-package up to 23.08
RECORD = "envcheck/resolve/record/rapids.json"
DRIVER_NOTE = "# The driver (CUDA "  # the header line saying which toolkit a newer driver takes


@dataclass
class _Lines:
    deps: list[tuple[str, str]] = field(default_factory=list)  # (spec, comment)
    notes: list[str] = field(default_factory=list)  # header lines: what was chosen for the user

    def add(self, spec: str, comment: str) -> None:
        self.deps.append((spec, comment))


class _Refused(Unsolvable):
    """The record rules the request out: the first error finding (compose() words it)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(f"recipe new: {finding.line()} (from {RECORD})")
        self.finding = finding


def _refuse(findings: Sequence[Finding]) -> None:
    bad = [f for f in findings if f.severity == ERROR]
    if bad:
        raise _Refused(bad[0])


def _works(opts: Options, record: Record, **change: str) -> bool:
    """Whether ``opts`` with ``change`` makes a recipe the record allows."""
    try:
        _compose(dataclasses.replace(opts, **change), record)
    except EnvcheckError:
        return False
    return True


def _cuda_candidates(record: Record, release: Release | None) -> list[str]:
    """The toolkits a release names (builds, majors as X.0, the record's floor)."""
    if release is None:
        return []
    out = [str(v) for v in _values(release.get("cuda_builds"))]
    out += [f"{m}.0" for m in _values(release.get("cuda_majors"))]
    floor = record.floors.get("cuda")
    if floor is not None and floor.known:
        out.append(str(floor.value["cuda"]))
    return [c for c in out if re.fullmatch(r"\d+\.\d+", c)]


def _values(v: Value) -> list[object]:
    return list(v.value) if v.known and isinstance(v.value, (list, tuple)) else []


def _choices(opts: Options, record: Record) -> list[tuple[str, str]]:
    """(flag, value) for each flag whose nearest other value alone makes the request work."""
    release = record.release(opts.rapids)
    choices = []
    rapids = nearest(opts.rapids, record.releases, lambda v: _works(opts, record, rapids=v))
    if rapids:
        choices.append(("--rapids", rapids))
    glibcs = {OSES[o][0]: o for o in OSES}
    by_glibc = nearest(OSES[opts.os][0], glibcs, lambda g: _works(opts, record, os=glibcs[g]))
    if by_glibc:
        choices.append(("--os", glibcs[by_glibc]))
    if opts.toolkit:  # the driver is the target's: no hint asks to state another
        toolkit = nearest(opts.toolkit, _cuda_candidates(record, release),
                          lambda t: _works(opts, record, toolkit=t))  # fmt: skip
        if toolkit:
            choices.append(("--toolkit", toolkit))
    pythons = [str(p) for p in _values(release.get("python"))] if release else []
    python = nearest(opts.python or "", pythons, lambda p: _works(opts, record, python=p))
    if python and opts.python:
        choices.append(("--python", python))
    return choices


# version flags -> (form, example): anything else is bad input (exit 4), not a contradiction
_VERSION_FLAGS = {
    "cuda": (re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}"), "12.4"),
    "toolkit": (re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}"), "11.8"),
    "python": (re.compile(r"[0-9]{1,2}\.[0-9]{1,3}"), "3.11"),
}


def _check_versions(opts: Options) -> None:
    for name, (form, example) in _VERSION_FLAGS.items():
        value = getattr(opts, name)
        if value is not None and not (isinstance(value, str) and form.fullmatch(value)):
            raise BadInput(f"--{name} {shown(value)} is not a version (e.g. {example})")


def _release(record: Record, opts: Options) -> Release:
    if not is_release(opts.rapids):
        raise BadInput(f"--rapids {opts.rapids!r} is not a RAPIDS release (YY.MM, e.g. 22.08)")
    _check_versions(opts)
    if opts.os not in OSES:
        raise BadInput(f"--os {opts.os!r}: one of {', '.join(OSES)}")
    glibc = OSES[opts.os][0]
    # the glibc and CUDA rules first: they hold for releases the record only knows by notice
    _refuse(lint([f"cudf={opts.rapids}"], {"glibc": glibc, "cuda": opts.cuda}, record))
    release = record.release(opts.rapids)
    if release is None:
        covered = sorted(record.releases, key=version_key)
        raise BadInput(
            f"RAPIDS {opts.rapids} is not in the release record ({covered[0]} to "
            f"{covered[-1]}): its pins are unknown here",
            detail=f"{RECORD} covers {', '.join(covered)}",
        )
    return release


def _python(release: Release, opts: Options) -> tuple[str, str]:
    py = release.get("python")
    if not py.known:
        if not opts.python:
            raise BadInput(f"the record does not say which Pythons RAPIDS {release.version} "
                           "was built for: pass --python")
        return opts.python, "the record does not say which Pythons this release was built for"
    chosen = opts.python or py.value[-1]
    return chosen, f"built for Python {', '.join(py.value)} ({cite(py)})"


def _pick_toolkit(record: Record, release: Release, opts: Options) -> tuple[str, str]:
    """(toolkit X.Y, a line saying why) for a release and driver: --toolkit, else the driver's
    CUDA where the release ships its major, else the newest toolkit the release ships that the
    driver runs (a driver newer than the release's CUDA: a 13.0 driver takes 25.08's 12.9)."""
    if opts.toolkit:
        return opts.toolkit, ""
    drv = opts.cuda
    majors = release.get("cuda_majors")
    if not majors.known or drv.split(".")[0] in majors.value:
        return drv, ""
    fits = runnable(release, drv, record.drivers)
    if not fits:
        return drv, ""  # the lint refuses it, with the rule
    major = fits[-1].split(".")[0]
    builds = [str(b) for b in _values(release.get("cuda_builds")) if str(b).startswith(f"{major}.")]
    chosen = builds[-1] if builds else fits[-1]
    note = (f"{DRIVER_NOTE[2:]}{drv}) is newer than RAPIDS {release.version}'s CUDA: the toolkit "
            f"is its newest the driver runs, CUDA {major} (built with {chosen}).")  # fmt: skip
    return chosen, note


def _toolkit(record: Record, release: Release, opts: Options, lines: _Lines) -> None:
    toolkit, note = _pick_toolkit(record, release, opts)
    if note:
        lines.notes.append(note)
    major = toolkit.split(".")[0]
    rule, builds, majors = (
        release.get("cuda_rule"),
        release.get("cuda_builds"),
        release.get("cuda_majors"),
    )
    built = f"; built with CUDA {', '.join(builds.value)} ({cite(builds)})" if builds.known else ""
    if rule.known and str(rule.value).startswith("cudatoolkit"):
        lines.add(f"cudatoolkit={toolkit}", f"rule {rule.value} ({cite(rule)}){built}")
    elif rule.known:
        lines.add(f"cuda-version={toolkit}", f"rule {rule.value} ({cite(rule)}){built}")
    else:
        low, why = _toolkit_low(record, release, major)
        top = f"<{int(major) + 1}"
        if int(major) < 12 and opts.cuda.split(".")[0] == major and not opts.toolkit:
            top = f"<={opts.cuda}"  # a CUDA 11 toolkit needs a driver of its own CUDA
        ships = (
            f"the release ships CUDA {', '.join(majors.value)} ({cite(majors)})"
            if majors.known
            else f"which CUDA majors the release ships is not in the data ({majors.note})"
        )
        spec = f"cuda-version={opts.toolkit}" if opts.toolkit else f"cuda-version>={low},{top}"
        lines.add(
            spec, f"CUDA {major}: {ships}{why}; how its conda packages pin CUDA is not in the data"
        )


def _toolkit_low(record: Record, release: Release, major: str) -> tuple[str, str]:
    """The oldest toolkit of ``major`` the release takes, and the words citing it."""
    own = toolkit_min(release, major)
    if own is not None:
        return str(own.value), f"; CUDA >= {own.value} ({cite(own)})"
    floor = record.floors.get("cuda")
    if (
        floor
        and floor.known
        and floor.value["cuda"].split(".")[0] == major
        and release_key(release.version) >= release_key(floor.value["since"])
    ):
        low = floor.value["cuda"]
        return low, f"; CUDA >= {low} from {floor.value['since']} on ({floor.value['by']}: " + (
            f"{cite(floor)})"
        )
    return f"{major}.0", ""


def ended(record: Record, name: str, rel: str) -> Value | None:
    """The library's lifetime when RAPIDS ``rel`` comes after its last release, else None."""
    try:
        base = package_spec(name).name
    except BadInput:
        return None
    lib = record.libraries.get(base)
    if lib is None or not lib.known or not lib.value["ended"]:
        return None
    return lib if release_key(rel) > release_key(lib.value["last"]) else None


def _refuse_ended(record: Record, release: Release, names: Sequence[str], flag: str) -> None:
    for name in names:
        lib = ended(record, name, release.version)
        if lib is not None:
            raise Unsolvable(
                f"recipe new: {flag} {name}: {name} has no RAPIDS {release.version}: its last "
                f"release is {lib.value['last']} (rule rapids.ended; --debug names its sources)",
                detail=f"rapids.ended: {lib.note} [{', '.join(lib.sources)}]",
            )


def _libs(record: Record, release: Release, opts: Options) -> list[str]:
    members = release.get("members")
    wanted = opts.libs
    _refuse_ended(record, release, [*(wanted or ()), *opts.with_], "--libs/--with")
    if wanted is None:
        wanted = LIBS_OLD if members.known and "cusignal" in members.value else LIBS
        wanted = tuple(
            n
            for n in wanted
            if (not members.known or n in members.value or n == "dask-cudf")
            and ended(record, n, release.version) is None
        )
    elif members.known:
        alien = [n for n in wanted if n not in members.value and n != "dask-cudf"]
        if alien:
            raise BadInput(
                f"{', '.join(alien)}: not part of RAPIDS {release.version} (its meta-package "
                f"lists {', '.join(members.value)}: {cite(members)})"
            )
    both = sorted(set(opts.exclude) & set(opts.libs or ()))
    if both:
        raise BadInput(f"{', '.join(both)} both in --libs and --exclude")
    return [n for n in wanted if n not in opts.exclude]


def _member_comment(release: Release, name: str) -> str:
    members = release.get("members")
    if not members.known:
        return f"RAPIDS {release.version} (the record does not list its packages)"
    if name in members.value:
        i = members.value.index(name)
        return f"{members.sources[i]}"
    # dask-cudf after 23.06: released with cudf under the same version
    old = [s for s in members.sources if "dask" not in s][:1]
    return "released with cudf under the same version" + (f" ({old[0]})" if old else "")


def _range(release: Release, name: str, lines: _Lines, *, advice: str = "") -> None:
    v = release.get(name)
    if v.known:
        lines.add(f"{name}{v.value}", f"{cite(v)}{advice}")


def compose(opts: Options, record: Record | None = None) -> str:
    """The recipe text for ``opts``; raises Unsolvable / BadInput for what the record rules
    out: one short line with the nearest choices that work (the rule's sources in its detail)."""
    record = record or load_record()
    try:
        return _compose(opts, record)
    except _Refused as e:
        short = re.sub(r"^recipe entry ('.*?') contradicts (RAPIDS [\d.]+):", r"\2 rules out \1:",
                       short_reason(e.finding.message))  # fmt: skip
        line = refusal_line(f"recipe new: {short}", _choices(opts, record), e.finding.rule)
        raise Unsolvable(line, detail=e.message) from None
    except BadInput as e:
        if not is_release(opts.rapids) or record.release(opts.rapids) is not None:
            raise
        rapids = nearest(opts.rapids, record.releases, lambda v: _works(opts, record, rapids=v))
        choices = [("--rapids", rapids)] if rapids else []
        reason = f"recipe new: RAPIDS {opts.rapids} is not in the release record"
        raise BadInput(refusal_line(reason, choices), detail=e.detail) from None


def _compose(opts: Options, record: Record) -> str:
    release = _release(record, opts)
    rel = release.version
    glibc, os_words = OSES[opts.os]
    python, py_note = _python(release, opts)
    lines = _Lines()
    lines.add(f"python={python}", py_note)
    _toolkit(record, release, opts, lines)
    libs = _libs(record, release, opts)
    for name in libs:
        lines.add(f"{name}={rel}", _member_comment(release, name))
    extras = list(opts.with_)
    if "xgboost" in extras:
        extras.remove("xgboost")
        xgb = release.get("xgboost")
        pinned = f"; it pins xgboost {xgb.value} ({cite(xgb)})" if xgb.known else ""
        lines.add(f"rapids-xgboost={rel}", f"xgboost built for this release{pinned}")
    for name in ("dask", "distributed", "dask-expr"):
        v = release.get(name)
        if v.known:
            lines.add(f"{name}{v.value}", cite(v))
    if "ucx" in extras:
        extras.remove("ucx")
        deps, notes = ucx_lines(release)
        lines.deps += deps
        lines.notes += notes
    _range(release, "nccl", lines)
    _range(release, "cupy", lines)
    _range(release, "numpy", lines)
    torch = [n for n in ("torch", "pytorch") if n in extras]
    for n in torch:
        extras.remove(n)
    if torch:
        v = release.get("pytorch")
        if v.known:
            lines.add(f"pytorch {v.value} *cuda*", f"{cite(v)}; a CUDA build")
        else:
            lines.add("pytorch * *cuda*", "a CUDA build; the record has no PyTorch range for "
                      f"RAPIDS {rel}")
    pandas = release.get("pandas")
    in_versions = any("versions.yaml" in p for p in pandas.sources)
    _range(release, "pandas", lines, advice="; RAPIDS' own environments" if in_versions else "")
    _add_extras(lines, extras)
    system = {"cuda": opts.cuda, "glibc": glibc}
    _refuse(lint([s for s, _ in lines.deps], system, record, platforms=["linux-64"]))
    return _render(opts, release, lines, system, os_words, python, libs)


def _add_extras(lines: _Lines, extras: Sequence[str]) -> None:
    """The --with entries the record has no rule for. One naming a package the recipe already
    holds is not listed twice (the recipe would not build): a bare name is there already, a
    spec takes the place of the recipe's entry (the lint then holds it to the record)."""
    held = {package_spec(spec).name: i for i, (spec, _) in enumerate(lines.deps)}
    for spec in extras:
        given = package_spec(spec)
        i = held.get(given.name)
        if i is None:
            lines.add(spec, "not in the record: the solve picks one that takes the pins above")
        elif given.version is not None or given.build is not None:
            old, why = lines.deps[i]
            lines.deps[i] = (spec, f"--with, in place of {old} ({why})")


def _render(opts, release, lines, system, os_words, python, libs) -> str:  # type: ignore[no-untyped-def]
    rel = release.version
    name = opts.name or f"rapids-{rel}-{opts.os}"
    floor = release.get("glibc")
    header = [
        f"# RAPIDS {rel} for {os_words} (glibc {system['glibc']}), drivers for CUDA {opts.cuda}.",
        *(f"# {n}" for n in lines.notes),
        *opts.command_lines(),
        "# Regenerate rather than edit: the command above writes it again.",
        "# Every pin cites the file and line the RAPIDS release record envcheck ships read it",
        "# from: integration/BRANCH/PATH is rapidsai/integration at that branch, pypi/... the",
        "# index and wheel METADATA of pypi.org (`envcheck docs recipes` names every source).",
    ]
    desc = opts.description or (
        f"Python {python}, RAPIDS {rel} ({', '.join(libs)}) for {os_words}."
    )
    out = [*header, f"name: {_scalar(name)}", "description: >-", f"  {desc}"]
    out.append(f"channels: [{', '.join(_scalar(c, flow=True) for c in opts.channels)}]")
    out.append("platforms: [linux-64]")
    glibc_note = f"{os_words}; RAPIDS {rel} needs glibc {floor.value} ({cite(floor)})"
    out.append(f'system: {{cuda: "{system["cuda"]}", glibc: "{system["glibc"]}"}}  # {glibc_note}')
    if opts.targets:
        out.append("targets:")
        out += [f"  - {_scalar(t)}" for t in opts.targets]
    out.append("dependencies:")
    width = max(len(s) for s, _ in lines.deps) + 2
    out += [f"  - {s.ljust(width)}# {c}".rstrip() for s, c in lines.deps]
    if opts.pip:
        out.append("pip:")
        out += [f"  - {_scalar(p)}" for p in opts.pip]
    if opts.exclude:
        out.append("exclude:")
        reason = opts.exclude_reason or "excluded with `envcheck recipe new --exclude`"
        for n in opts.exclude:
            out += [f"  - name: {_scalar(n)}", "    reason: >-", f"      {reason}"]
    return "\n".join(out) + "\n"


def _scalar(text: str, flow: bool = False) -> str:
    """`text` as a YAML string: plain when YAML reads it back as that very string (what the
    shipped recipes hold), else double-quoted (JSON's escapes are YAML's)."""
    import json

    import yaml

    wrapped = f"[{text}]" if flow else f"- {text}"
    try:
        if yaml.safe_load(wrapped) == [text]:
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)


# --- the pipeline --------------------------------------------------------------------------


def recipe_new(opts: Options) -> Report:
    """The recipe as the report's output, or written to ``opts.out`` (a regular file or
    absent)."""
    from envcheck.destinations import check_destination
    from envcheck.report import Report, Result, Status

    out = opts.out
    if out is not None:
        check_destination(out, f"--out {out}")
    text = compose(opts)
    where = "printed" if out is None else f"written to {out}"
    said = [ln[2:] for ln in text.splitlines() if ln.startswith(DRIVER_NOTE)]
    result = Result(
        "recipe new", Status.PASS, " ".join([f"RAPIDS {opts.rapids}, {opts.os}: {where}.", *said])
    )
    if out is None:
        return Report("envcheck recipe new", results=(result,), output=text)
    from envcheck.atomic import write_files_atomically

    write_files_atomically({out: text.encode()})
    output = "\n".join([f"wrote {out}", *said, ""])
    return Report("envcheck recipe new", results=(result,), output=output)
