"""Facts another process sent, read within bounds: a size cap, JSON nested no deeper than
inputs.MAX_DEPTH, and every field the type envcheck's model gives it (`conforms`), before any
dataclass is built. Every place envcheck takes facts from another process reads them here:
verify job's ranks, Dask workers and schedulers, Ray tasks, `--prefix` interpreters. None of
them is ever unpickled by envcheck (Dask's and Ray's own protocols aside)."""

from __future__ import annotations

import json
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


_HINTS: dict[type, dict[str, Any]] = {}  # resolved type hints, per class


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        import sys

        ns = {**vars(sys.modules[cls.__module__]), "Any": Any}
        _HINTS[cls] = typing.get_type_hints(cls, ns)
    return _HINTS[cls]


def _check(hint: Any, value: Any, where: str) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return ""
    if origin in (typing.Union, types.UnionType):
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
