"""What ranks send each other: signed, bounded JSON, never pickle.

`gather` is an all-gather over the gloo group of each rank's value as JSON bytes behind an
HMAC (auth.Binding) over the launch (its session nonce, run id, MASTER_ADDR:PORT, world size),
the sender rank and the step: first every rank's length, then
every rank's bytes padded to the longest within the cap. Each rank then reads each other
rank's bytes on its own: the MAC, the size cap, UTF-8, JSON without NaN, the nesting cap, and
(bounded.conforms) the shape of the dataclass the value stands for. A rank whose bytes fail any of
these is a `Bad` naming it; nothing it sent is ever executed or unpickled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envcheck.verify import bounded
from envcheck.verify.job import auth

MAX_FACTS = bounded.MAX_FACTS  # bytes of one rank's facts
MAX_SMALL = 256 << 10  # bytes of one rank's value in the other gathers


class WireError(Exception):
    """A rank sent what cannot be read: the message names the rank."""


@dataclass(frozen=True)
class Bad:
    """What rank `rank` sent and why it was refused."""

    rank: int
    why: str


def gather(dist: Any, binding: auth.Binding, purpose: str, value: Any, limit: int,
           digest: Any = None) -> list[Any]:
    """Every rank's `value` (JSON types: tuples come back as lists) in rank order; a rank whose
    bytes were refused is a Bad in its place. Collective: every rank calls it alike. `digest`
    (a hashlib object) takes every rank's bytes as gathered: alike on every rank."""
    import torch

    rank, world = dist.get_rank(), dist.get_world_size()
    body = binding.sign(rank, f"gather/{purpose}", value).encode()
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
        raw = _bytes(chunk[:size])
        if digest is not None:
            digest.update(b"%d %d " % (r, size) + raw)
        try:
            out.append(binding.verify(r, f"gather/{purpose}", raw, limit))
        except auth.AuthError as e:
            out.append(Bad(r, str(e)))
    return out


def _bytes(t: Any) -> bytes:
    """A uint8 tensor's bytes (through numpy where torch has it)."""
    try:
        return bytes(t.numpy().tobytes())
    except (RuntimeError, ImportError):  # a torch without numpy
        return bytes(t.tolist())


def gather_all(dist: Any, binding: auth.Binding, purpose: str, value: Any,
               limit: int = MAX_SMALL, digest: Any = None) -> list[Any]:
    """gather, where any refused rank fails the step (WireError naming it)."""
    got = gather(dist, binding, purpose, value, limit, digest)
    bad = [g for g in got if isinstance(g, Bad)]
    if bad:
        raise WireError("; ".join(f"rank {b.rank} sent unusable data: {b.why}" for b in bad))
    return got
