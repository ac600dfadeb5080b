"""Facts another process sent, read within bounds: a size cap, JSON nested no deeper than
inputs.MAX_DEPTH, and every field the type envcheck's model gives it (`conforms`), before any
dataclass is built. Every place envcheck takes facts from another process reads them here:
verify job's ranks, Dask workers and schedulers, Ray tasks, `--prefix` interpreters. None of
them is ever unpickled by envcheck (Dask's and Ray's own protocols aside)."""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any, Callable

from envcheck.errors import BadInput
from envcheck.inputs import loads_json
from envcheck.verify.facts import NodeFacts, facts_from_dict

MAX_FACTS = 4 << 20  # bytes of one process's facts as JSON


class Unreadable(ValueError):
    """Facts that are too big, not JSON, or not the model's shape: the message says which."""


def read_facts(data: bytes | str, what: str = "facts") -> NodeFacts:
    """NodeFacts from JSON text another process sent; Unreadable naming why not."""
    if len(data) > MAX_FACTS:
        raise Unreadable(f"{what}: {len(data)} bytes, more than the {MAX_FACTS} allowed")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = loads_json(text, what)
    except UnicodeDecodeError:
        raise Unreadable(f"{what}: not UTF-8") from None
    except BadInput as e:
        raise Unreadable(e.message[:300]) from None
    return facts_of(value, what)


def facts_of(value: Any, what: str = "facts") -> NodeFacts:
    """NodeFacts from parsed JSON, checked against the model first; Unreadable otherwise."""
    if not isinstance(value, dict):
        raise Unreadable(f"{json.dumps(value)[:40]} is not a JSON object")
    why = conforms(NodeFacts, value)
    if why:
        raise Unreadable(f"{what} do not match envcheck's model ({why[:200]})")
    try:
        return facts_from_dict(value)
    except Exception as e:  # noqa: BLE001 - any way they fail to build is the same answer
        raise Unreadable(f"{what} do not build ({type(e).__name__})") from None


def conforms(cls: type, data: Any, where: str = "") -> str:
    """Why `data` (plain JSON) is not a dict of `cls`'s fields with their types ("" when it
    is). Keys the class does not have are allowed (a newer sender); missing ones default."""
    hints = _hints(cls)
    if not isinstance(data, dict):
        return f"{where or cls.__name__}: {type(data).__name__}, not an object"
    for name, value in data.items():
        if name in hints:
            why = _check(hints[name], value, f"{where}{name}")
            if why:
                return why
    return ""


_UNION_TYPE = getattr(types, "UnionType", None)  # X | Y evaluated (Python >= 3.10)
_HINTS: dict[type, dict[str, Any]] = {}  # resolved type hints, per class


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        import sys

        ns = {**vars(sys.modules[cls.__module__]), "Any": Any}
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name, ann in vars(klass).get("__annotations__", {}).items():
                hints[name] = _annotation(ann, ns) if isinstance(ann, str) else ann
        _HINTS[cls] = hints
    return _HINTS[cls]


# An annotation's text as the typing objects of every Python the collector runs on (>= 3.8):
# `int | None` and `tuple[X, ...]` are read here, not evaluated (3.8 and 3.9 cannot).
_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9.]*|\.\.\.|[\[\],|])")
_GENERIC = {"tuple": typing.Tuple, "dict": typing.Dict, "list": typing.List,
            "frozenset": typing.FrozenSet, "Mapping": typing.Dict}
_BUILTIN = {"int": int, "float": float, "str": str, "bool": bool, "bytes": bytes,
            "None": type(None), "Any": Any, "dict": dict, "list": list, "tuple": tuple}


def _annotation(text: str, ns: dict[str, Any]) -> Any:
    tokens = [t for t in _TOKEN.findall(text) if t]
    hint, rest = _union(tokens, ns)
    if rest:
        raise TypeError(f"cannot read the annotation {text!r}")
    return hint


def _union(tokens: list[str], ns: dict[str, Any]) -> tuple[Any, list[str]]:
    parts = []
    while True:
        hint, tokens = _atom(tokens, ns)
        parts.append(hint)
        if not tokens or tokens[0] != "|":
            break
        tokens = tokens[1:]
    return (parts[0] if len(parts) == 1 else typing.Union[tuple(parts)]), tokens


def _atom(tokens: list[str], ns: dict[str, Any]) -> tuple[Any, list[str]]:
    name, tokens = tokens[0], tokens[1:]
    if name == "...":
        return Ellipsis, tokens
    if tokens and tokens[0] == "[":
        args, tokens = [], tokens[1:]
        while tokens[0] != "]":
            arg, tokens = _union(tokens, ns)
            args.append(arg)
            tokens = tokens[1:] if tokens[0] == "," else tokens
        return _GENERIC[name][tuple(args) if len(args) > 1 else args[0]], tokens[1:]
    if name in _BUILTIN:
        return _BUILTIN[name], tokens
    head, *attrs = name.split(".")
    value = ns[head]
    for attr in attrs:
        value = getattr(value, attr)
    return value, tokens


def _check(hint: Any, value: Any, where: str) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return ""
    if origin is typing.Union or (_UNION_TYPE is not None and origin is _UNION_TYPE):
        if any(not _check(a, value, where) for a in args):
            return ""
        return f"{where}: {type(value).__name__} is not {hint}"
    if hasattr(hint, "__dataclass_fields__"):
        return conforms(hint, value, f"{where}.")
    if origin is tuple:
        if not isinstance(value, list):
            return f"{where}: {type(value).__name__}, not a list"
        if len(args) == 2 and args[1] is Ellipsis:
            return _first(_check(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            return f"{where}: {len(value)} items, not {len(args)}"
        return _first(_check(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where}: {type(value).__name__}, not an object"
        return _first(_check(args[1], v, f"{where}[{k!r}]") for k, v in value.items())
    return "" if _scalar(hint)(value) else f"{where}: {type(value).__name__}, not {hint.__name__}"


def _scalar(hint: Any) -> Callable[[Any], bool]:
    if hint is bool:
        return lambda v: isinstance(v, bool)
    if hint is int:
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if hint is float:
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if hint is str:
        return lambda v: isinstance(v, str)
    if hint is type(None):
        return lambda v: v is None
    return lambda v: False  # a type JSON cannot carry


def _first(whys: Any) -> str:
    return next((w for w in whys if w), "")
