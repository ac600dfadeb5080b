"""Resolve a recipe's ``pip:`` entries against PyPI with uv, for the solved Python and platform."""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envcheck.errors import BadInput, EnvcheckError, Unreachable, Unsolvable
from envcheck.lockfile.names import PLATFORM_ARCH, pypi_name
from envcheck.lockfile.pip_package import PipPackage
from envcheck.resolve.pip_platform import target_platform
from envcheck.resolve.placeholder import is_placeholder, placeholder_error
from envcheck.resolve.pypi_index import IndexFile, Page, Prefetch, best_file, index_pages
from envcheck.resolve.solve import SolvedPackage
from envcheck.resolve.uv_log import touched
from envcheck.uv_runner import uv_command

PYPI = "https://pypi.org/simple"
_LOG_POLL_S = 0.02  # how often uv's log file is read while it resolves
# what a line of `uv pip compile --annotation-style line` says: "name==version  # via a, b"
_PINNED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*(?:#\s*via\s+(.*))?$")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9]")


def python_version(solved: Sequence[SolvedPackage]) -> str:
    for p in solved:
        if p.name == "python":
            return ".".join(p.version.split(".")[:2])
    raise BadInput("the recipe has pip entries but its solve holds no python")


def conda_python_pins(solved: Sequence[SolvedPackage]) -> dict[str, str]:
    """PyPI name -> version of every conda package that installs into Python."""
    pins: dict[str, str] = {}
    for p in solved:
        if p.name == "python" or not any(d.split(" ")[0] == "python" for d in p.depends):
            continue
        try:
            version = str(Version(p.version))
        except InvalidVersion:  # conda-only version strings cannot constrain a PyPI resolution
            continue
        pins[canonicalize_name(pypi_name(p.name))] = version
    return pins


@dataclass(frozen=True)
class Target:
    """What the pip entries are resolved for: CPython X.Y on one platform."""

    python: str  # "3.12"
    platform: str  # conda's: linux-64
    uv_platform: str  # uv's --python-platform
    tags: tuple[Tag, ...]  # wheel tags it installs, best first
    admitted: tuple[Tag, ...]  # the part of ``tags`` uv resolves with (pip_platform.py)
    glibc: str = ""  # the recipe's system.glibc, for a linux target

    @classmethod
    def of(cls, python: str, platform: str, system: Mapping[str, str]) -> Target:
        uv_platform, platform_tags, uv_tags = target_platform(platform, system)
        pyver = tuple(int(x) for x in python.split("."))

        def tags(platforms: list[str]) -> tuple[Tag, ...]:
            return (*cpython_tags(pyver, platforms=platforms),
                    *compatible_tags(pyver, platforms=platforms))

        glibc = system.get("glibc", "") if platform in PLATFORM_ARCH else ""
        return cls(python, platform, uv_platform, tags(platform_tags), tags(uv_tags), glibc)


@dataclass(frozen=True)
class Compiled:
    """One package of uv's resolution and what required it (uv's annotation)."""

    name: str
    version: str
    via: tuple[str, ...]  # canonical names; "-r" entries (the requirements file) left out


@dataclass(frozen=True)
class Resolution:
    packages: tuple[PipPackage, ...]
    compiled: tuple[Compiled, ...]
    index: Mapping[str, Page | None] = field(hash=False)  # name -> the index's files
    target: Target
    constraints: Mapping[str, str] = field(hash=False)  # conda's Python packages: name -> version
    log: tuple[str, ...] = field(default=(), hash=False, repr=False)  # uv's verbose log
    extra_index: tuple[str, ...] = ()  # the recipe's pip_extra_index


def parse_compiled(text: str) -> list[Compiled]:
    out = []
    for line in text.splitlines():
        m = _PINNED.match(line.strip())
        if not m:
            continue
        via = [v.strip() for v in (m.group(3) or "").split(",") if v.strip()]
        names = tuple(canonicalize_name(v) for v in via if not v.startswith("-"))
        out.append(Compiled(canonicalize_name(m.group(1)), m.group(2), names))
    return out


def _command(req: Path, cons: Path, target: Target, index_url: str, verbose: bool,
             extra_index: Sequence[str]) -> list[str]:
    return uv_command(
        "pip", "compile", str(req), "--constraint", str(cons),
        "--python-version", target.python, "--python-platform", target.uv_platform,
        "--no-header", "-v" if verbose else "--quiet", "--annotation-style", "line",
        "--index-url", index_url, *(f"--extra-index-url={u}" for u in extra_index),
        "--no-python-downloads",  # uv would fetch a Python from GitHub to build sdists
    )


def uv_compile(
    requirements: Sequence[str],
    constraints: Mapping[str, str],
    target: Target,
    index_url: str,
    timeout: float,
    on_log: Callable[[str], None] | None = None,
    extra_index: Sequence[str] = (),
    on_start: Callable[[], None] = lambda: None,
) -> tuple[subprocess.CompletedProcess[str], tuple[str, ...]]:
    """``uv pip compile``: metadata only, nothing installed, no Python downloaded. With
    ``on_log``, uv runs verbose and each line of its log is passed on as it comes; the log is
    returned beside what uv says without it. ``on_start`` runs as uv starts."""
    with tempfile.TemporaryDirectory(prefix="envcheck-pip-") as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join(requirements) + "\n")
        cons = Path(tmp) / "constraints.txt"
        # what conda installs must stay as conda solved it
        cons.write_text("".join(f"{n}=={v}\n" for n, v in sorted(constraints.items())))
        cmd = _command(req, cons, target, index_url, on_log is not None, extra_index)
        try:
            if on_log is None:
                on_start()
                return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout), ()
            return _run_logged(cmd, Path(tmp) / "out.txt", timeout, on_log, on_start)
        except subprocess.TimeoutExpired:
            raise Unreachable(
                f"pip resolution against {index_url} took over {timeout:.0f} s"
            ) from None


def _run_logged(cmd: list[str], out: Path, timeout: float, on_log: Callable[[str], None],
                on_start: Callable[[], None]
                ) -> tuple[subprocess.CompletedProcess[str], tuple[str, ...]]:
    """Run uv verbose, its log read as it resolves; DEBUG lines (and the indented lines that
    continue them) are the log, the rest is uv's own stderr. The log goes to a file, not a
    pipe: uv never waits on this process to read it."""
    err_path = out.with_suffix(".log")
    log: list[str] = []
    said: list[str] = []
    in_log = False

    def take(line: str) -> None:
        nonlocal in_log
        if line.startswith(("DEBUG ", "TRACE ")) or (in_log and line[:1] in (" ", "")):
            in_log = True
            log.append(line)
            on_log(line)
        else:
            in_log = False
            said.append(line)

    deadline = time.monotonic() + timeout
    with out.open("w") as stdout, err_path.open("w") as stderr, err_path.open() as tail:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True)
        try:
            on_start()
            partial = ""
            while True:
                done = proc.poll() is not None
                chunk = tail.read()
                lines = (partial + chunk).split("\n")
                partial = lines.pop()
                for line in lines:
                    take(line)
                if done:
                    break
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(cmd, timeout)
                if not chunk:
                    time.sleep(_LOG_POLL_S)
            if partial:
                take(partial)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = "\n".join(said) + ("\n" if said else "")
    return subprocess.CompletedProcess(cmd, proc.returncode, out.read_text(), text), tuple(log)


def uv_reasoning(stderr: str) -> list[str]:
    """uv's explanation of an unsolvable set, one sentence a line (its lines are wrapped)."""
    text = stderr.split("No solution found when resolving dependencies", 1)[-1]
    text = " ".join(ln.strip() for ln in text.splitlines() if not ln.startswith("warning:"))
    text = re.sub(r"^:?\s*cause:\s*", "", text.strip())
    sentences = re.split(r"(?<=\.)\s+(?=And because|Because)", text)
    return [s.strip() for s in sentences if s.strip()]


def key_line(reasoning: Sequence[str]) -> str:
    """The conclusion that names the clash: uv's last '... are incompatible', else its last."""
    clashes = [s for s in reasoning if "incompatible" in s or "unsatisfiable" not in s]
    line = (clashes or list(reasoning) or ["uv found no solution"])[-1]
    premise = re.match(r"^(?:And because|Because) (.*?),? we can conclude that (.*)$", line)
    if premise and "unsatisfiable" in premise.group(2):  # the why, not "... are unsatisfiable"
        return premise.group(1).rstrip(".")
    return re.sub(r"^(And because|Because) .*?we can conclude that ", "", line).rstrip(".")


def named_in(text: str, names: Sequence[str]) -> list[str]:
    """Which of ``names`` (canonical) uv's text speaks of."""
    said = {canonicalize_name(t) for t in _TOKEN.findall(text)}
    return [n for n in names if n in said]


def requirement_name(req: str) -> str:
    from packaging.requirements import Requirement

    return canonicalize_name(Requirement(req).name)


def explain_clash(
    stderr: str, requirements: Sequence[str], constraints: Mapping[str, str]
) -> tuple[str, str, str]:
    """(which recipe entries and conda packages clash, uv's key line, the chain from entry
    to entry through uv's "depends on" steps, "" when they join none)."""
    from envcheck.resolve.uv_chain import chain

    reasoning = uv_reasoning(stderr)
    text = " ".join(reasoning)
    by_name = {requirement_name(r): r for r in requirements}
    entries = [f"{by_name[n]!r}" for n in named_in(text, list(by_name))]
    conda = [f"{n}=={constraints[n]} (conda)" for n in named_in(text, sorted(constraints))]
    named = entries + conda
    if not named:
        who = "the recipe's pip entries"
    else:
        who = f"recipe pip entr{'y' if len(named) == 1 else 'ies'} " + " and ".join(named)
    return who, key_line(reasoning), chain(reasoning, by_name)


def _failure(proc: subprocess.CompletedProcess[str], requirements, constraints, index_url):  # type: ignore[no-untyped-def]
    err = proc.stderr.strip()
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    first = next((ln for ln in lines if not ln.startswith("warning:")), "uv failed")
    if "No solution found" in err:
        who, key, steps = explain_clash(err, requirements, constraints)
        steps = f" [{steps}]" if steps else ""
        return Unsolvable(f"pip: {who} clash: {key} (uv){steps}", detail=err)
    if "error sending request" in err or "dns error" in err or "Failed to fetch" in err:
        from envcheck.network import root_cause

        return Unreachable(f"{index_url} cannot be reached from here: {first} "
                           f"({root_cause(err)})", detail=err)
    return EnvcheckError(f"pip entries cannot be resolved: {first}", detail=err)


def resolve(
    requirements: Sequence[str],
    solved: Sequence[SolvedPackage],
    platform: str,
    system: Mapping[str, str],
    *,
    index_url: str = PYPI,
    extra_index: Sequence[str] = (),
    timeout: float = 300,
) -> Resolution:
    """Pin ``requirements`` and what they pull in, minus what the conda solve already holds;
    each package's file (url, sha256) from the index's JSON page, its requirers from uv."""
    target = Target.of(python_version(solved), platform, system)
    pins = conda_python_pins(solved)
    direct = [requirement_name(r) for r in requirements]
    with Prefetch([*extra_index, index_url]) as pages:

        def read_direct() -> None:  # the held-back check reads the direct entries' pages
            for name in direct:
                pages.add(name, parse=True)

        def prefetch(line: str) -> None:
            if (name := touched(line)) is not None and name not in pins:
                pages.add(name)

        # uv first: the page threads' start (TLS, the first pages) would hold up its launch
        proc, log = uv_compile(requirements, pins, target, index_url, timeout, prefetch,
                               extra_index, on_start=read_direct)
        if proc.returncode != 0:
            _raise_failure(proc, requirements, pins, target, system, index_url, extra_index,
                           pages, timeout)
        compiled = [c for c in parse_compiled(proc.stdout) if c.name not in pins]
        index = pages.pages([c.name for c in compiled] + [n for n in direct if n not in pins])
    requires: dict[str, dict[str, str]] = {c.name: {} for c in compiled}
    for c in compiled:
        for up in c.via:
            if up in requires:  # the edge up -> c; uv's annotation names no specifier, and
                requires[up][c.name] = ""  # "" reads as "any version" (PEP 508) where "*" fails
    out = []
    for c in compiled:
        page = index.get(c.name) or []
        f = best_file(page, c.version, target.tags)
        if f is None:
            raise EnvcheckError(f"pip: no file with a sha256 for {c.name} {c.version}")
        if not f.tags and isinstance(page, Page) and is_placeholder(c.name,
                                                                    page.of_version(c.version)):
            raise placeholder_error(c.name, c.version, index_url, extra_index)
        out.append(PipPackage(c.name, c.version, f.url, f.sha256, requires[c.name]))
    return Resolution(tuple(out), tuple(compiled), index, target, pins, log, tuple(extra_index))


def _raise_failure(proc: subprocess.CompletedProcess[str], requirements: Sequence[str],
                   pins: Mapping[str, str], target: Target, system: Mapping[str, str],
                   index_url: str, extra_index: Sequence[str], pages: Prefetch,
                   timeout: float) -> NoReturn:
    """uv's failure in recipe terms: a placeholder sdist, wheels that need a newer glibc, a
    clash between entries, or uv's own first line."""
    from envcheck.resolve.placeholder import from_build_failure

    def files_of(name: str, version: str) -> list[IndexFile]:
        page = pages.pages([name])[name]
        return page.of_version(version) if page is not None else []

    placeholder = from_build_failure(proc.stderr, files_of, index_url, extra_index)
    if placeholder is not None:
        raise placeholder
    failure = _failure(proc, requirements, pins, index_url)
    if isinstance(failure, Unsolvable) and system.get("glibc"):
        _refuse_unfit_wheels(requirements, pins, target, system, index_url, timeout, extra_index)
    raise failure


# the glibc an unconstrained resolution is tried for when an old glibc's fails
NEW_GLIBC = "2.39"


def _refuse_unfit_wheels(
    requirements: Sequence[str],
    pins: Mapping[str, str],
    target: Target,
    system: Mapping[str, str],
    index_url: str,
    timeout: float,
    extra_index: Sequence[str] = (),
) -> None:
    """Unsolvable for an old glibc: does it solve for a current one? Then name every wheel
    that needs the newer glibc, with the newest release of it that fits."""
    from envcheck.resolve import el7

    glibc = system["glibc"]
    if el7.fits(NEW_GLIBC, glibc):
        return  # not an old glibc: the clash is the entries' own
    wide = Target.of(target.python, target.platform, {**system, "glibc": NEW_GLIBC})
    proc, _ = uv_compile(requirements, pins, wide, index_url, timeout, extra_index=extra_index)
    if proc.returncode != 0:
        return
    compiled = [c for c in parse_compiled(proc.stdout) if c.name not in pins]
    index = index_pages([c.name for c in compiled], [*extra_index, index_url])
    arch = PLATFORM_ARCH[target.platform]
    found = []
    for c in compiled:
        files = index.get(c.name) or []
        f = best_file(files, c.version, wide.tags)
        if f is None or el7.fits(el7.wheel_needs(f.filename, arch), glibc):
            continue
        names = [x.filename for x in files if not x.yanked]
        found.append(
            el7.unfit_wheels(
                c.name,
                c.version,
                [f.filename],
                glibc,
                target.platform,
                target.python,
                lambda _n, names=names: names,
            )
        )
    direct = {requirement_name(r) for r in requirements}
    mine = [o for o in found if o is not None and o.name in direct]
    rest = [o for o in found if o is not None and o.name not in direct]
    if mine or rest:
        text = ("recipe entries: " + "; ".join(o.line(glibc) for o in mine)) if mine else ""
        if rest:
            text += f"{'; ' if mine else ''}and what they pull in: "
            text += "; ".join(o.line(glibc) for o in rest)
        raise Unsolvable(
            f"pip entries do not resolve for glibc {glibc}: resolved for glibc {NEW_GLIBC} "
            f"they take {len(mine) + len(rest)} wheel(s) that do not load on {glibc}: {text}"
        )

