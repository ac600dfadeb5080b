"""The data of a YAML lock file, exactly as PyYAML's safe loader gives it, fast for conda-lock's
own layout.

conda-lock's layout (its writer's and envcheck's) is read line by line (0.04 s for 5,000
packages, against 4.7 s for PyYAML's pure-Python loader); any other layout (a pixi.lock, a
hand-edited file) falls back to PyYAML, libyaml's parser where there is one. A test holds the
two paths equal. Standard library and PyYAML: verify loads locks with this on Python 3.8.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


class _Unrecognised(Exception):
    """The text is not in conda-lock's fixed layout: PyYAML reads it."""


@contextmanager
def _no_gc() -> Iterator[None]:
    """No cyclic GC while a load builds its many acyclic dicts.

    Collections triggered by the allocations alone cost more than the load. Nothing is frozen
    afterwards: the API runs in long-lived processes (notebooks), where gc.freeze() would keep
    every cycle alive at that moment for good.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_document(text: str, *, libyaml_errors: bool = False) -> Any:
    """What ``yaml.safe_load(text)`` returns, fast for conda-lock's layout; yaml errors as it.

    A broken file's error comes from PyYAML's pure-Python parser (the words verify has
    always printed), or from libyaml's with ``libyaml_errors`` (the words build printed).
    """
    with _no_gc():
        doc = fast_document(text)
        return _yaml_document(text, libyaml_errors) if doc is None else doc


def _yaml_document(text: str, libyaml_errors: bool) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
        except yaml.YAMLError:
            if libyaml_errors:
                raise
    return yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the safe loader


_OUTSIDE = re.compile(r"^(?:---|\.\.\.|%)", re.M)  # document markers, directives
_ODD_CHARS = re.compile("[\t\r\x85\u2028\u2029\ufeff]")  # tabs, other line breaks, BOM
_AFTER_RECORDS = re.compile(r"\n(?!- |  )")  # the first line that is not part of a record
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\Z")
_QUOTED = re.compile(r"'((?:[^']|'')*)'\Z")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


def fast_document(text: str) -> dict[Any, Any] | None:
    """The document of a conda-lock file in conda-lock's layout; None for any other layout.

    conda-lock writes top-level keys (comments, version, metadata) and ``package:`` with its
    records as ``- key: value`` / ``  key: value`` lines, one nested level deep (``hash:``,
    ``dependencies:``). The top-level keys go to PyYAML (a few lines); the records are
    split here.
    """
    import yaml

    at = text.find("\npackage:\n")
    if at < 0 or not _plain_characters(text):
        return None
    start = at + len("\npackage:\n")
    after = _AFTER_RECORDS.search(text, start - 1)
    end = len(text) if after is None else after.start() + 1
    rest = text[: at + 1] + text[end:]
    if _OUTSIDE.search(rest) or end == start or text[end : end + 1] in (" ", "\n", "-"):
        return None  # no records, or what follows them is not a plain top-level key
    try:
        packages = _records(text[start:end])
        doc = yaml.load(rest, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except (_Unrecognised, yaml.YAMLError):
        return None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict) or "package" in doc:
        return None
    doc["package"] = packages
    return doc


def _plain_characters(text: str) -> bool:
    """No character PyYAML refuses, and no tab, BOM or line break other than newline."""
    import yaml

    flat = text.replace("\n", "")
    if flat.isascii() and flat.isprintable():  # the usual lock: one quick pass
        return True
    return not (_ODD_CHARS.search(text) or yaml.reader.Reader.NON_PRINTABLE.search(text))


class _Scalars(dict):  # type: ignore[type-arg]
    """text -> its value, each distinct scalar resolved once (most recur: specs, platforms)."""

    def __missing__(self, text: str) -> Any:
        value = self[text] = _scalar(text)
        return value


class _Keys(dict):  # type: ignore[type-arg]
    def __missing__(self, text: str) -> Any:
        if not _KEY.match(text):
            raise _Unrecognised(text)
        value = self[text] = _scalar(text)
        return value


def _records(body: str) -> list[dict[Any, Any]]:
    """``- key: value`` records with one nested mapping level; _Unrecognised for anything else.

    ``{}`` and ``[]`` are made anew each time, as PyYAML makes them.
    """
    keys, values = _Keys(), _Scalars()
    records: list[dict[Any, Any]] = []
    record: dict[Any, Any] = {}
    nested: dict[Any, Any] | None = None  # the mapping a "key:" line opened
    opened: Any = None  # its key
    lines = body.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline
    for line in lines:
        if line[:4] == "    ":
            key, colon, text = line[4:].partition(": ")
            if nested is None or not colon:
                raise _Unrecognised(line)
            value = values[text]
            nested[keys[key]] = value.__class__() if value.__class__ in _NEW else value
            continue
        if nested is not None and not nested:
            record[opened] = None  # "key:" with nothing under it is null
        nested = None
        if line[:2] == "- ":
            record = {}
            records.append(record)
        elif line[:2] != "  " or not records:
            raise _Unrecognised(line)
        key, colon, text = line[2:].partition(": ")
        if colon:
            value = values[text]
            record[keys[key]] = value.__class__() if value.__class__ in _NEW else value
        elif key[-1:] == ":":
            opened = keys[key[:-1]]
            nested = record[opened] = {}
        else:
            raise _Unrecognised(line)
    if nested is not None and not nested:
        record[opened] = None
    return records


_NEW = (dict, list)


def _scalar(text: str) -> Any:
    """One block-context scalar as PyYAML resolves it: str, bool, None, {} or [] only."""
    import yaml

    if not text:
        raise _Unrecognised(text)
    first = text[0]
    if first == "'":
        m = _QUOTED.match(text)
        if m is None:
            raise _Unrecognised(text)
        return m.group(1).replace("''", "'")
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if first in _INDICATORS or text[-1] in " :" or ": " in text or " #" in text:
        raise _Unrecognised(text)
    for tag, regexp in yaml.SafeLoader.yaml_implicit_resolvers.get(first, ()):
        if regexp.match(text):
            if tag == "tag:yaml.org,2002:bool":
                return yaml.SafeLoader.bool_values[text.lower()]
            if tag == "tag:yaml.org,2002:null":
                return None
            raise _Unrecognised(text)  # numbers, dates: rare in a lock, PyYAML builds them
    return text
