"""A refusal as one short line: what the record rules out, then the nearest choices that work.

``recipe new --rapids 24.06 --os el7`` is refused as
``RAPIDS 24.06 needs glibc >= 2.28; the recipe targets glibc 2.17: try --rapids 24.04 or --os el8
(rule rapids.glibc; --debug names its sources)``: the rule's reason without its parentheses
(the long story and the source pointers go to the error's detail), and for each flag that alone
can make the request work, its nearest value. Which values work is the caller's question
(``works``); this module only orders candidates and formats the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

LIMIT = 200  # characters: a refusal is read at a terminal, in one line


def short_reason(message: str) -> str:
    """``message`` without its parenthesised asides and [source] lists, one line."""
    text = re.sub(r"\[[^\[\]]*\]", "", message)
    previous = None
    while previous != text:  # nested parentheses, innermost first
        previous = text
        text = re.sub(r"\s*\([^()]*\)", "", text)
    text = " ".join(text.split())
    return re.sub(r"\s+([:;,])", r"\1", text).rstrip(" ;:,")


def version_key(text: str) -> tuple[int, ...]:
    """'24.04' -> (24, 4), '3.10' -> (3, 10); a part that is not a number counts as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))


def by_distance(wanted: str, candidates: Iterable[str]) -> list[str]:
    """``candidates`` nearest to ``wanted`` first (by position among all of them and
    ``wanted``, in version order); of two as near, the older first. ``wanted`` itself left out."""
    ordered = sorted({*candidates, wanted}, key=version_key)
    at = ordered.index(wanted)
    ranked = sorted(range(len(ordered)), key=lambda i: (abs(i - at), i > at))
    return [ordered[i] for i in ranked if ordered[i] != wanted]


def nearest(wanted: str, candidates: Iterable[str], works: Callable[[str], bool]) -> str | None:
    """The nearest of ``candidates`` (by_distance) for which ``works`` holds; None if none."""
    return next((c for c in by_distance(wanted, candidates) if works(c)), None)


def refusal_line(reason: str, choices: Sequence[tuple[str, str]], rule: str = "") -> str:
    """``reason: try --flag value or --flag value (rule ...)``; ``choices`` are (flag, value)
    pairs, each alone enough to make the request work."""
    tail = f" (rule {rule}; --debug names its sources)" if rule else ""
    if choices:
        tried = " or ".join(f"{flag} {value}" for flag, value in choices)
        line = f"{reason}: try {tried}{tail}"
    else:
        line = f"{reason}; no single flag change fixes it{tail}"
    if len(line) > LIMIT and len(reason) > LIMIT // 2:
        return refusal_line(reason[: LIMIT // 2 - 3].rstrip() + "...", choices, rule)
    return line
