"""How each expectation value is read, whichever way it comes: a flag, an API keyword or a key
of an --expect file. ExpectOptions (verify/expectations.py) declares one of these as the check
of each field, so all three refuse the same values with the same line.

Each reader takes the value as it comes (strings as a file or a flag has them, or the value
as the field holds it) and returns it as the field holds it, or raises Wrong saying what was
expected; ``check`` turns that into BadInput naming the flag, keyword or file key.
"""

from __future__ import annotations

import math
import re
from os import PathLike, fspath
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.text import shown

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_SECONDS = 86400.0  # probe-timeout: a day; a longer probe is a hung one
MAX_DURATION = 3650 * 86400.0  # since: ten years of kernel log

_VERSION = re.compile(r"\d+(\.\d+)*")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(mib|mb|m|gib|gb|g|tib|tb|t)?\s*$", re.I)


class Wrong(Exception):
    """A value of the wrong type or form; the message says what was expected."""


def parse_size_mib(text: str) -> int:
    """'40GiB', '80G', '16000MiB', '16000' (MiB) -> MiB. Decimal and binary units both mean
    binary here: people write 80G for an 80 GB card whose NVML total is 81920 MiB."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a memory size: {text!r} (use e.g. 40GiB or 16000MiB)")
    factor = {"": 1, "m": 1, "g": 1024, "t": 1024 * 1024}[(m[2] or "")[:1].lower()]
    return int(float(m[1]) * factor)


def typed(value: Any) -> str:
    """"str 'eight'", "float 12.1", "a list of 3 items": the type and a bounded view."""
    view = shown(value)
    return view if view.startswith(("a ", "an ")) else f"{type(value).__name__} {view}"


def check(read: Callable[[Any], Any], empty: Any = None) -> Callable[[Any, str], Any]:
    """An Option check from a reader: ``empty`` (None, or () for a list) stays not given."""

    def checked(value: Any, said: str) -> Any:
        if value is None or value == empty:
            return empty
        try:
            return read(value)
        except Wrong as e:
            raise BadInput(f"{said} must be {e}, not {typed(value)}") from None

    return checked


def integer(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise Wrong("an integer")
    if v < 0:
        raise Wrong("an integer >= 0")
    return v


def text(v: Any) -> str:
    if not isinstance(v, str):
        raise Wrong("a string")
    return v


def path(v: Any) -> Path:
    if not isinstance(v, (str, PathLike)):
        raise Wrong("a path")
    return Path(fspath(v))


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise Wrong("true or false")
    return v


def version(v: Any) -> str:
    # A YAML/TOML number is refused: 12.10 would read as 12.1.
    if not isinstance(v, str) or not _VERSION.fullmatch(v.strip()):
        raise Wrong('a version as a quoted string, e.g. "12.4"')
    return v.strip()


def compute_capability(v: Any) -> tuple[int, int]:
    if isinstance(v, tuple) and len(v) == 2 and all(type(x) is int for x in v):
        return v  # as the field holds it
    m = re.fullmatch(r"(\d+)\.(\d+)", v.strip()) if isinstance(v, str) else None
    if not m:
        raise Wrong('a compute capability as a quoted string, e.g. "8.0"')
    return int(m[1]), int(m[2])


def size(v: Any) -> int:
    if isinstance(v, str):
        try:
            return parse_size_mib(v)
        except ValueError:
            pass
    elif isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v  # MiB, as the flag without a unit
    raise Wrong('a size, e.g. "40GiB", or MiB as an integer')


def seconds(v: Any) -> float:
    # YAML's .inf and .nan are floats: refused, as a limit that never ends or never compares
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= MAX_SECONDS:
        return float(v)
    raise Wrong(f"a number of seconds above 0 and at most {MAX_SECONDS:g}")


def duration(v: Any) -> float:
    seconds_ = math.nan
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*([smhd]?)\s*", v)
        if m:
            seconds_ = float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m[2]]
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        seconds_ = float(v)
    if 0 <= seconds_ <= MAX_DURATION:  # nan compares false
        return seconds_
    raise Wrong(f'a duration, e.g. "12h", or seconds as a number (at most {MAX_DURATION:g})')


def names(v: Any) -> tuple[str, ...]:
    """"a,b", or a sequence of such strings (a set sorted) -> ('a', 'b'): blanks dropped,
    first occurrence kept (no module, library or check id holds a comma)."""
    if isinstance(v, str):
        v = [v]
    elif isinstance(v, (set, frozenset)):
        v = sorted(v) if all(isinstance(x, str) for x in v) else list(v)
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise Wrong("a list of strings")
    return tuple(dict.fromkeys(w.strip() for x in v for w in x.split(",") if w.strip()))
