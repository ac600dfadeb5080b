"""What ranks send each other: signed, bounded JSON, never pickle.

`gather` is an all-gather over the gloo group of each rank's value as JSON bytes behind an
HMAC (auth.mac) naming the sender, the step and the launch: first every rank's length, then
every rank's bytes padded to the longest within the cap. Each rank then reads each other
rank's bytes on its own: the MAC, the size cap, UTF-8, JSON without NaN, the nesting cap, and
(`conforms`) the shape of the dataclass the value stands for. A rank whose bytes fail any of
these is a `Bad` naming it; nothing it sent is ever executed or unpickled.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

from envcheck.verify.job import auth

MAX_FACTS = 4 << 20  # bytes of one rank's facts
MAX_SMALL = 256 << 10  # bytes of one rank's value in the other gathers


class WireError(Exception):
    """A rank sent what cannot be read: the message names the rank."""


@dataclass(frozen=True)
class Bad:
    """What rank `rank` sent and why it was refused."""

    rank: int
    why: str


def _name(purpose: str, rank: int) -> str:
    return f"gather/{purpose}/{rank}"


def gather(dist: Any, key: bytes, purpose: str, value: Any, limit: int) -> list[Any]:
    """Every rank's `value` (JSON types: tuples come back as lists) in rank order; a rank whose
    bytes were refused is a Bad in its place. Collective: every rank calls it alike."""
    import torch

    rank, world = dist.get_rank(), dist.get_world_size()
    body = auth.sign(key, _name(purpose, rank), value).encode()
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(lengths, torch.tensor([len(body)], dtype=torch.int64))
    sizes = [int(t.item()) for t in lengths]
    pad = max((s for s in sizes if 0 <= s <= limit), default=0)
    mine = torch.zeros(max(pad, 1), dtype=torch.uint8)
    if len(body) <= pad:
        mine[:len(body)] = torch.frombuffer(bytearray(body), dtype=torch.uint8)
    chunks = [torch.zeros(max(pad, 1), dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(chunks, mine)
    out: list[Any] = []
    for r, (size, chunk) in enumerate(zip(sizes, chunks)):
        if not 0 <= size <= limit:
            out.append(Bad(r, f"sent {size} bytes, more than the {limit} allowed"))
            continue
        try:
            out.append(auth.verify(key, _name(purpose, r), chunk[:size].numpy().tobytes(),
                                   limit))
        except auth.AuthError as e:
            out.append(Bad(r, str(e)))
    return out


def gather_all(dist: Any, key: bytes, purpose: str, value: Any,
               limit: int = MAX_SMALL) -> list[Any]:
    """gather, where any refused rank fails the step (WireError naming it)."""
    got = gather(dist, key, purpose, value, limit)
    bad = [g for g in got if isinstance(g, Bad)]
    if bad:
        raise WireError("; ".join(f"rank {b.rank} sent unusable data: {b.why}" for b in bad))
    return got


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


_HINTS: dict[type, dict[str, Any]] = {}


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
