"""Text from outside (kernel logs, hostnames, file names) made safe to print and to serialise.

A kernel log line can carry a BEL, an ANSI escape or a NUL; a file name can carry a lone
surrogate. Printed raw they drive the terminal, and XML 1.0 forbids most of them outright (a
JUnit file with one does not parse). They are shown as visible escapes (``\\x1b``) instead:
nothing is dropped, nothing reaches a terminal or a parser raw.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, surrogates, and the two non-characters
# XML 1.0 also forbids
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline shown as an escape."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_escape, text)


def first_line(exc: BaseException, limit: int = 300) -> str:
    """``exc`` on one line: its type name and the first non-empty line of its text ("KeyError:
    'x'"), the type name alone when it has no text; at most ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."
