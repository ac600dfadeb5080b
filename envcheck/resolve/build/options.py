"""What `envcheck build` is asked to do, as one typed object (from flags or keyword arguments):
each field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput, ExitCode
from envcheck.flags import seconds
from envcheck.option import REQUIRED, Option, declared
from envcheck.resolve.solve import DEFAULT_FETCH_TIMEOUT_S


def _recipes(value: object, said: str) -> tuple[Path, ...]:
    recipes = tuple(values.path(r, said) for r in values.sequence(value, said))
    if not recipes:
        raise BadInput("build: give at least one recipe")
    return recipes


@dataclass(frozen=True)
@declared
class BuildOptions:
    """What one build does; ``envcheck build``'s flags, typed."""

    recipes: tuple[Path, ...] = Option(REQUIRED, positional=True, nargs="+", type=Path,
                                       metavar="RECIPE", check=_recipes,
                                       help="recipe YAML file(s), or a conda environment.yml")
    out: Path = Option("locks", type=Path, check=values.path, help="lock directory (locks/)")
    check: bool = Option(  # solve nothing: say whether each lock is current
        False, action="store_true", check=values.flag,
        help=f"solve nothing; exit {int(ExitCode.STALE)} when a lock is missing or stale")
    platform: str | None = Option(  # build only this platform of each recipe
        check=values.optional_text,
        help="build only this platform of the recipe (an environment.yml that names none: the "
        "platform to lock; default this machine's)")
    fetch_timeout: float = Option(
        DEFAULT_FETCH_TIMEOUT_S, type=seconds, metavar="SECONDS", check=values.seconds,
        help="limit for fetching a remote channel's repodata; past it the build exits "
        f"{int(ExitCode.UNREACHABLE)} naming the channel (default %(default)g)")
    channel_data: tuple[str, ...] = Option(  # solve against these channels, not the recipe's
        (), action="append", metavar="URL", check=values.words,
        help="solve against these channels (e.g. a local snapshot of the recipe's channels) "
        "instead of the recipe's; the lock records them (repeatable)")
    lint: bool = Option(  # refuse pins the RAPIDS release record contradicts
        True, flag="--no-lint", action="store_false", check=values.flag,
        help="solve even where the RAPIDS release record says the recipe's pins contradict it")
    try_: tuple[str, ...] = Option(  # candidates to try one by one (``--try``): writes no lock
        (), flag="--try", action="append", metavar="SPEC,SPEC,...", check=values.words,
        help="solve the recipe with each candidate added alone (pip:REQ adds to its pip "
        "entries); print which fit and, for a conflict, the smallest clashing set of entries; "
        "writes no lock")
