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


def without_prefix(text: str, prefix: str) -> str:
    """``text`` less a leading ``prefix`` (str.removeprefix, which Python 3.8 lacks)."""
    return text[len(prefix):] if text.startswith(prefix) else text


def without_suffix(text: str, suffix: str) -> str:
    """``text`` less a trailing ``suffix`` (str.removesuffix, which Python 3.8 lacks)."""
    return text[: -len(suffix)] if suffix and text.endswith(suffix) else text


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline shown as an escape."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_escape, text)


# a URL's password (scheme://user:PASSWORD@host; the last @ before the path ends it) and a
# conda channel token (https://conda.anaconda.org/t/TOKEN/channel)
_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*):[^\s/]*@")
_TOKEN = re.compile(r"(://[^/\s]+/t/)[^/\s]+")


def redact(text: str) -> str:
    """``text`` with the secrets URLs in it carry shown as ``***``: ``user:***@host``,
    ``/t/***/``."""
    if "://" not in text:
        return text
    return _TOKEN.sub(r"\1***", _PASSWORD.sub(r"\1:***@", text))


def safe(text: str) -> str:
    """What envcheck shows of any text, on a terminal or in a report file: secrets in URLs
    redacted (``redact``), control characters escaped (``printable``). The report model
    (envcheck.report) passes every string it holds through it, and ``say`` every message, so
    every renderer (table, JSON, JUnit, HTML, Nagios) and stderr get only its result."""
    return printable(redact(text))


def first_line(exc: BaseException, limit: int = 300) -> str:
    """``exc`` on one line: its type name and the first non-empty line of its text ("KeyError:
    'x'"), the type name alone when it has no text; at most ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


SHOWN = 40  # a value longer than this is described (type and length), never embedded


def shown(value: object, limit: int = SHOWN) -> str:
    """A value for an error message: its repr when short, else its type and length.

    A message never embeds a whole value from outside: an alias bomb's repr, a 5 MB line or
    a terminal escape would be printed (or built) in full. Short strings and numbers are
    shown (escaped as printable does); anything longer or nested is named by type and size.
    """
    if isinstance(value, (bool, type(None))):
        return repr(value)
    if isinstance(value, float):
        return repr(value)  # at most 24 characters: 'inf', 'nan', '1e+308'
    if isinstance(value, int):  # repr of a 5,000-digit int is refused (and slow) past 4300
        return repr(value) if value.bit_length() <= 3 * limit else f"an int of {limit}+ digits"
    if isinstance(value, (str, bytes)):
        if len(value) <= limit:
            return printable(repr(value))
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"a {type(value).__name__} of {len(value)} {unit}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, dict):
        return f"a mapping of {len(value)} keys"
    return f"a {type(value).__name__}"


MAX_LINE = 2000  # characters of one line on the terminal; the rest is counted, not printed


def for_terminal(text: str, max_line: int = MAX_LINE) -> str:
    """``text`` as printed to stderr: secrets redacted and control characters escaped (safe),
    each line cut at max_line characters, the cut said ("... 5242880 more characters")."""
    lines = safe(text).split("\n")
    return "\n".join(
        line if len(line) <= max_line
        else f"{line[:max_line]}... ({len(line) - max_line} more characters)"
        for line in lines
    )


def say(message: str, prefix: str = "envcheck: ") -> None:
    """One message on stderr, as for_terminal makes it: how envcheck tells the user what went
    wrong (error lines, lint notes, install's steps)."""
    import sys

    from envcheck.progress import clear_for_output

    clear_for_output()  # a progress line on the terminal makes room
    print(prefix + for_terminal(message), file=sys.stderr, flush=True)
