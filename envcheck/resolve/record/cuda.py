"""Driver and toolkit as CUDA and conda define them (pure functions).

The recipe's ``system.cuda`` (``--cuda``) is the driver's CUDA, conda's ``__cuda``; a toolkit
(``cuda-version``, ``cudatoolkit``, a ``-cuXX`` wheel) must be one the driver runs:

  CUDA 12 on   a driver of the same major or newer (minor version compatibility: a 12.0
               driver runs 12.9; a 13.0 driver runs 12.9; a 12.8 driver runs no 13.x);
  older        a driver of the toolkit's own CUDA or newer (11.8 needs an 11.8 driver);

and, where RAPIDS docs' platform support lists the release, at least its ``driver_min`` for
that major (25.06's CUDA 11: 470.42.01, the driver of CUDA 11.4). A release's toolkit minimum
per major (25.06: 11.4) is that table's ``toolkit_min``, or cudf's README (CUDA 11.0+) for the
oldest major of the releases before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from envcheck.resolve.record.entries import CUDA_WHEEL, TOOLKITS, Entry
from envcheck.resolve.record.finding import ERROR, WARN, Finding
from envcheck.resolve.record.specs import minors, overlaps
from envcheck.resolve.record.table import Release, Value

Clash = Callable[[str, str, Entry, Value, str], None]

MINORS = range(10)  # the X.Y toolkits a spec is tried on: X.0 to X.9


def vkey(text: str) -> tuple[int, ...]:
    """'12.8' -> (12, 8); parts that are not numbers end it ('12.x' -> (12,))."""
    out = []
    for part in text.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def toolkit_min(release: Release, major: str) -> Value | None:
    """The oldest toolkit of CUDA ``major`` the release takes, cited; None where the data does
    not say (the CUDA floor of a support notice is lint.py's)."""
    fact = release.get(f"cuda:{major}")
    if fact.known:
        return Value(fact.value["toolkit_min"], fact.sources[:1], fact.note)
    low = release.get("cuda_min")
    majors = release.get("cuda_majors")
    oldest = min(majors.value, key=int) if majors.known and majors.value else None
    if low.known and str(low.value).split(".")[0] == major == oldest:
        return low
    return None


def driver_need(release: Release, major: str, drivers: Mapping[str, Value]) -> Value | None:
    """The driver CUDA a toolkit of ``major`` needs at least (value: 'X.Y'), cited: the
    release's driver_min (the driver of its toolkit_min); for CUDA 12 on, the major's first.
    The note is the driver version ('580'), or empty where the data names none."""
    fact = release.get(f"cuda:{major}")
    if fact.known:
        return Value(fact.value["toolkit_min"], fact.sources[2:], fact.value["driver_min"])
    got = drivers.get(major)
    if got is not None and got.known:
        return Value(got.value["cuda"], got.sources, got.value["driver_min"])
    if int(major) >= 12:
        return Value(f"{major}.0", ())
    return None


def runs(driver: str, toolkit: str, need: Value | None = None) -> bool:
    """Whether a driver of CUDA ``driver`` runs toolkit ``toolkit`` (X.Y), and is at least
    ``need``'s CUDA."""
    d, t = vkey(driver), vkey(toolkit)
    if need is not None and need.known and d < vkey(str(need.value)):
        return False
    if t[0] >= 12:
        return d[:1] >= t[:1]
    return d[:2] >= t[:2]


def shipped(release: Release, spec: str | None, majors: Sequence[str]) -> list[str]:
    """The X.Y toolkits of ``majors`` that ``spec`` admits, at or above the release's minimum."""
    out = []
    for major in majors:
        low = toolkit_min(release, major)
        for t in minors(spec or "*", [f"{major}.{n}" for n in MINORS]):
            if low is None or vkey(t) >= vkey(str(low.value)):
                out.append(t)
    return out


def runnable(
    release: Release, driver: str, drivers: Mapping[str, Value], spec: str | None = None
) -> list[str]:
    """The toolkits the release ships (``spec`` admits) that a ``driver`` runs, oldest first."""
    majors = release.get("cuda_majors")
    if not majors.known:
        return []
    return [
        t
        for t in shipped(release, spec, majors.value)
        if runs(driver, t, driver_need(release, t.split(".")[0], drivers))
    ]


def _why_not(release: Release, majors: Sequence[str], drivers: Mapping[str, Value]) -> str:
    """'CUDA 13 needs driver >= 580 (CUDA 13.0)' per major, joined."""
    parts = []
    for m in majors:
        need = driver_need(release, m, drivers)
        drv = f"driver >= {need.note} (CUDA {need.value})" if need and need.note else ""
        if int(m) >= 12:
            parts.append(f"CUDA {m} needs {drv or f'a driver of CUDA {m}.0 or newer'}")
        else:
            low = toolkit_min(release, m)
            what = f" from {low.value}" if low is not None else ""
            tail = f", and {drv}" if drv else ""
            parts.append(f"CUDA {m} toolkits{what} need a driver of their own CUDA{tail}")
    return "; ".join(parts)


def _sources(release: Release, majors: Sequence[str], drivers: Mapping[str, Value]) -> tuple:
    out: list[str] = []
    for m in majors:
        need = driver_need(release, m, drivers)
        low = toolkit_min(release, m)
        out += [*(need.sources if need else ()), *(low.sources if low else ())]
    return tuple(dict.fromkeys(out))


def cuda_rules(
    release: Release,
    anchor: str,
    by_name: Mapping[str, Entry],
    system: Mapping[str, str],
    drivers: Mapping[str, Value],
    clash: Clash,
) -> list[Finding]:
    """A toolkit entry of a CUDA major the release ships, at or above its minimum, that the
    target driver runs; a driver that runs some toolkit of the release."""
    out: list[Finding] = []
    majors, wheels = release.get("cuda_majors"), release.get("cuda_majors_pip")
    if not majors.known:
        return out
    drv = system.get("cuda")
    wheel = by_name.get(CUDA_WHEEL)
    if wheel and wheel.version and wheels.known:
        got = minors(wheel.version, [f"{m}.0" for m in wheels.value])
        if not got:
            have = ", ".join(wheels.value) or "no"
            clash("rapids.cuda", ERROR, wheel, wheels,
                  f"pypi.org has its wheels for CUDA {have}.x only (the conda packages: "
                  f"CUDA {', '.join(majors.value)}.x)")  # fmt: skip
        elif drv:
            _driver_runs(release, wheel, [g.split(".")[0] for g in got], drv, drivers, clash)
    for name in TOOLKITS:
        e = by_name.get(name)
        if not (e and e.version):
            continue
        got = [m for m in majors.value if minors(e.version, [f"{m}.{n}" for n in MINORS])]
        if not got:
            clash("rapids.cuda", ERROR, e, majors, f"it ships CUDA {', '.join(majors.value)}.x")
            continue
        if not shipped(release, e.version, got):
            low = next(x for m in got if (x := toolkit_min(release, m)) is not None)
            what = f"it requires CUDA {low.value}+ for CUDA {str(low.value).split('.')[0]}"
            clash("rapids.cuda", ERROR, e, low, f"{what} ({low.note})")
            continue
        if not drv or _driver_runs(release, e, got, drv, drivers, clash):
            out += _build_warning(release, anchor, e, got)
    if drv and not runnable(release, drv, drivers):
        out.append(
            Finding(
                "rapids.cuda",
                ERROR,
                f"a driver for CUDA {drv} (the recipe's target) runs no toolkit RAPIDS "
                f"{release.version} ships: {_why_not(release, majors.value, drivers)}",
                (anchor,),
                _sources(release, majors.value, drivers) or majors.sources,
            )
        )
    return out


def _driver_runs(
    release: Release,
    e: Entry,
    got: Sequence[str],
    drv: str,
    drivers: Mapping[str, Value],
    clash: Clash,
) -> bool:
    """Whether the target driver runs some toolkit the entry admits; a clash if not."""
    spec = None if e.name == CUDA_WHEEL else e.version
    if any(t.split(".")[0] in got for t in runnable(release, drv, drivers, spec)):
        return True
    why = _why_not(release, got, drivers)
    # a toolkit before 12 on an older driver: CUDA's rule; the record's line is the major's
    fact = Value(why, _sources(release, got, drivers) or release.get("cuda_majors").sources, why)
    clash("rapids.cuda", ERROR, e, fact,
          f"a driver for CUDA {drv} (the recipe's target) runs none of it: {why}")  # fmt: skip
    return False


def _build_warning(release: Release, anchor: str, e: Entry, got: Sequence[str]) -> list[Finding]:
    """An entry that admits only toolkits older than every build of its major: a warning."""
    builds = release.get("cuda_builds")
    if not builds.known:
        return []
    same_major = [b for b in builds.value if b.split(".")[0] in got]
    spec = e.version or "*"
    older = [b for b in same_major if not minors(spec, [b]) and overlaps(spec, f"<{b}")]
    if not (older and len(older) == len(same_major)):
        return []
    rule = release.get("cuda_rule")
    return [
        Finding(
            "rapids.cuda-build",
            WARN,
            f"{e.text!r}: RAPIDS {release.version}'s rule is {rule.value} "
            f"({rule.cite()}), which this meets, but the release was built with CUDA "
            f"{', '.join(same_major)} ({builds.cite()}) and pins cuda-python "
            f"{_cuda_python(release)}: an older toolkit is not what it was built for",
            (anchor, e.text),
            (*rule.sources, *builds.sources),
        )
    ]


def _cuda_python(release: Release) -> str:
    v = release.get("cuda-python")
    if not v.known:
        return "(unknown)"
    val = v.value if isinstance(v.value, str) else v.value.get("11", "")
    return f"{val} ({v.cite()})"
