"""Validators every verb's Options constructor shares: the command line and the Python API
build the same Options, so a value one refuses the other refuses too, with the same line.

Each takes the value and the flag that names it (``--timeout``) and returns the value as the
Options field holds it, or raises BadInput (exit 4). Python 3.8: the verify side imports this.
"""

from __future__ import annotations

import math
import unicodedata
from pathlib import Path

from envcheck.errors import BadInput

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


def seconds(value: Any, flag: str, *, zero: bool = False) -> float:
    """A finite number of seconds, more than 0 (``zero``: 0 or more); nan, inf, a bool or a
    string is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{flag} must be a number of seconds, not {type(value).__name__} "
                       f"{value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise BadInput(f"{flag} {value!r}: seconds must be a finite number")
    if value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "positive"
        raise BadInput(f"{flag} must be {least}, not {value:g}")
    return value


def count(value: Any, flag: str, *, least: int = 1) -> int:
    """A whole number, ``least`` or more; a float (2.5, nan, inf), a bool or a string is
    refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{flag} must be a whole number, not {type(value).__name__} {value!r}")
    if value < least:
        raise BadInput(f"{flag} must be {least} or more, not {value}")
    return value


def optional_count(value: Any, flag: str, *, least: int = 1) -> int | None:
    return None if value is None else count(value, flag, least=least)


def control_char(value: str, allowed: str = "") -> str:
    """The first control character in ``value`` (as \\n, \\x1b...), or ''."""
    for ch in value:
        if unicodedata.category(ch) == "Cc" and ch not in allowed:
            return repr(ch)[1:-1]
    return ""


def text(value: Any, flag: str, *, allowed: str = "") -> str:
    """A string without control characters (a newline would start a new line of whatever the
    verb writes); ``allowed`` names the ones that may appear."""
    if not isinstance(value, str):
        raise BadInput(f"{flag} must be a string, not {type(value).__name__} {value!r}")
    bad = control_char(value, allowed)
    if bad:
        raise BadInput(f"{flag}: control character {bad} in {value!r}: not allowed")
    return value


def optional_text(value: Any, flag: str) -> str | None:
    return None if value is None else text(value, flag)


def words(value: Any, flag: str) -> tuple[str, ...]:
    """A sequence of strings as a tuple, each one checked as ``text``. A bare string is refused:
    read as a sequence it would be its letters."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise BadInput(f"{flag} must be a list of strings, not {type(value).__name__} "
                       f"{value!r}")
    return tuple(text(v, flag) for v in value)


def sequence(value: Any, flag: str) -> tuple:
    """A sequence as a tuple; a bare string (its letters) or a non-sequence is refused."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise BadInput(f"{flag} must be a list, not {type(value).__name__} {value!r}")
    return tuple(value)


def choice(value: Any, flag: str, choices: Any) -> str:
    if value not in choices:
        raise BadInput(f"{flag} {value!r} is not one of {', '.join(sorted(choices))}")
    return str(value)


def path(value: Any, flag: str) -> Path:
    """A path as Path; a str or os.PathLike is taken, anything else refused."""
    if isinstance(value, Path):
        return value
    try:
        return Path(value)
    except TypeError:
        raise BadInput(f"{flag} must be a path, not {type(value).__name__} {value!r}") from None


def optional_path(value: Any, flag: str) -> Path | None:
    return None if value is None else path(value, flag)


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise BadInput(f"{name} must be True or False, not {value!r}")
    return value
