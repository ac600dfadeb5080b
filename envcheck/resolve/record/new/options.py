"""What `envcheck recipe new` is asked for, as one typed object (from flags or keyword
arguments), validated when built: what `build` could not read back is refused in one line
naming the option (a control character, a name that is not a conda package name)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.lockfile.names import NAME
from envcheck.option import REQUIRED, Option, declared
from envcheck.resolve.record.conda_version import check_package_spec

# target OS -> (glibc it ships, words for the header); each distribution's own glibc package
# of its release (docs/recipes.md lists them with their sources)
OSES = {
    "el7": ("2.17", "RHEL 7 / CentOS 7"),
    "rhel7": ("2.17", "RHEL 7"),  # the names `envcheck image --os` takes for the same glibc
    "centos7": ("2.17", "CentOS 7"),
    "el8": ("2.28", "RHEL / Rocky / Alma 8"),
    "el9": ("2.34", "RHEL / Rocky / Alma 9"),
    "amzn2": ("2.26", "Amazon Linux 2"),
    "amzn2023": ("2.34", "Amazon Linux 2023"),
    "ubuntu18.04": ("2.27", "Ubuntu 18.04"),
    "ubuntu20.04": ("2.31", "Ubuntu 20.04"),
    "ubuntu22.04": ("2.35", "Ubuntu 22.04"),
    "ubuntu24.04": ("2.39", "Ubuntu 24.04"),
    "debian11": ("2.31", "Debian 11"),
    "debian12": ("2.36", "Debian 12"),
    "sles15": ("2.31", "SUSE Linux Enterprise 15 SP3 and later"),
}
DEFAULT_CHANNELS = ("rapidsai", "conda-forge", "nvidia")


LIBS = ("cudf", "dask-cudf", "dask-cuda", "cuml", "cugraph", "cuspatial", "cuxfilter", "cucim")


def comma_list(text: str) -> tuple[str, ...]:
    """'cudf, dask-cudf' -> ('cudf', 'dask-cudf'): how --libs, --with, --exclude and
    --channels take a list."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


@dataclass(frozen=True)
@declared
class Options:
    """Each field's flag and help declared beside it (envcheck/option.py); the checks are
    _check's, below."""

    rapids: str = Option(REQUIRED, help="RAPIDS release, e.g. 22.08")
    cuda: str = Option(  # the target drivers' CUDA version (system.cuda)
        REQUIRED, help="CUDA version the target's drivers support")
    os: str = Option(REQUIRED, choices=sorted(OSES), help="target OS (sets glibc)")
    python: str | None = Option(
        help="Python X.Y (default: the newest the release was built for)")
    toolkit: str | None = Option(  # the CUDA toolkit to build against; default: cuda
        help="CUDA toolkit X.Y to build against (default: --cuda)")
    libs: tuple[str, ...] | None = Option(  # default: LIBS the release has
        type=comma_list, help=f"RAPIDS libraries (default: {','.join(LIBS)})")
    with_: tuple[str, ...] = Option(
        (), flag="--with", type=comma_list, metavar="LIST",
        help="extras: xgboost, ucx, torch, or any package name/spec")
    exclude: tuple[str, ...] = Option(
        (), type=comma_list, metavar="LIST",
        help="packages the solve must not install (recipe `exclude:`)")
    exclude_reason: str = Option("", help="why (goes into the recipe)")
    pip: tuple[str, ...] = Option((), action="append", help="a pip requirement (repeatable)")
    channels: tuple[str, ...] = Option(DEFAULT_CHANNELS, type=comma_list)
    name: str | None = Option(help="recipe name (default: rapids-RELEASE-OS)")
    description: str = Option("")
    targets: tuple[str, ...] = Option(
        (), flag="--target", action="append", metavar="TARGET",
        help="a target machine (repeatable)")
    out: Path | None = Option(  # write the recipe here (a regular file or absent), else print it
        type=Path, help="write here instead of printing")

    def __post_init__(self) -> None:
        _check(self)

    def arguments(self) -> list[str]:
        """The `recipe new` arguments that make this recipe, in a fixed order."""
        out = ["--rapids", self.rapids, "--cuda", self.cuda, "--os", self.os]
        for opt, value in (("--python", self.python), ("--toolkit", self.toolkit)):
            if value:
                out += [opt, value]
        if self.libs is not None:
            out += ["--libs", ",".join(self.libs)]
        for opt, given in (("--with", self.with_), ("--exclude", self.exclude)):
            if given:
                out += [opt, ",".join(given)]
        if self.channels != DEFAULT_CHANNELS:
            out += ["--channels", ",".join(self.channels)]
        for p in self.pip:
            out += ["--pip", p]
        for opt, text in (("--name", self.name), ("--description", self.description)):
            if text:
                out += [opt, text]
        for t in self.targets:
            out += ["--target", t]
        if self.exclude_reason:
            out += ["--exclude-reason", self.exclude_reason]
        return out

    def command_lines(self) -> list[str]:
        """The command as comment lines: one flag (and its value) per line."""
        import shlex

        args = self.arguments()
        lines = ["# Generated by: envcheck recipe new \\"]
        pairs = [args[i : i + 2] for i in range(0, len(args), 2)]
        for n, (opt, value) in enumerate(pairs):
            end = " \\" if n < len(pairs) - 1 else ""
            lines.append(f"#   {opt} {shlex.quote(value)}{end}")
        return lines


_TEXT = ("rapids", "cuda", "python", "toolkit", "exclude_reason", "name", "description")
_LISTS = ("libs", "with_", "exclude", "pip", "channels", "targets")
_SPECS = ("libs", "with_", "exclude")


def flag(name: str) -> str:
    """The flag of an Options field: with_ -> --with, targets -> --target."""
    return Options.__options__[name].flag


def _check(opts: Options) -> None:
    set_ = object.__setattr__
    for name in _TEXT:
        value = getattr(opts, name)
        if value is not None or name in ("rapids", "cuda", "exclude_reason", "description"):
            _no_control(_string(value, name), name)
    values.choice(opts.os, "--os", OSES)
    for name in _LISTS:
        value = getattr(opts, name)
        if value is not None or name != "libs":
            items = values.sequence(value, flag(name))
            value = tuple(_no_control(_string(v, name), name) for v in items)
            set_(opts, name, value)
    set_(opts, "out", values.optional_path(opts.out, "--out"))
    if opts.name is not None and not NAME.match(opts.name):
        raise BadInput(f"--name {opts.name!r}: a recipe name is lower-case letters, digits, . _ -")
    _check_specs(opts)


def _string(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{flag(name)} must be a string, not {type(value).__name__} {value!r}")
    return value


def _no_control(value: str, name: str) -> str:
    bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise BadInput(f"{flag(name)}: control character {bad!r} in {value!r}: not allowed")
    return value


def _check_specs(opts: Options) -> None:
    """Package names must be conda package specs (conda names are ASCII)."""
    for name in _SPECS:
        for spec in getattr(opts, name) or ():
            try:
                check_package_spec(spec)
            except BadInput as e:
                raise BadInput(f"{flag(name)} {e}") from None
