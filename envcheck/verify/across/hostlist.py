"""Slurm hostlist expressions ("gpu[01-03,07],login1") to host names, as `scontrol show
hostnames` prints them. Pure and stdlib-only.

The expansion is bounded: a list naming more than `limit` hosts (n[0-9999999999] names ten
billion) is a ValueError before any of them is made.
"""

from __future__ import annotations

MAX_HOSTS = 65536  # Slurm's own MaxNodeCount is far below this


def expand_hostlist(text: str, limit: int = MAX_HOSTS) -> list[str]:
    """Every host a hostlist names, in order, each once; ValueError past `limit` names."""
    out: dict[str, None] = {}
    for part in _split_top(text.strip()):
        for host in _expand_one(part, limit):
            out[host] = None
        if len(out) > limit:
            raise ValueError(f"names more than {limit} hosts")
    return list(out)


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _expand_one(part: str, limit: int) -> list[str]:
    open_ = part.find("[")
    if open_ < 0:
        return [part]
    close = part.find("]", open_)
    if close < 0:
        raise ValueError(f"unbalanced '[' in hostlist {_cut(part)!r}")
    head, body, tail = part[:open_], part[open_ + 1 : close], part[close + 1 :]
    rest = _expand_one(tail, limit)
    out: list[str] = []
    for item in body.split(","):
        lo, sep, hi = item.partition("-")
        if not _digits(lo) or (sep and not _digits(hi)):
            raise ValueError(f"bad range {_cut(item)!r} in hostlist {_cut(part)!r}")
        width = len(lo)
        first, last = int(lo), int(hi if sep else lo)
        if len(out) + (last - first + 1) * len(rest) > limit:
            raise ValueError(f"names more than {limit} hosts")
        for n in range(first, last + 1):
            out += [f"{head}{n:0{width}d}{r}" for r in rest]
    return out


def _digits(text: str) -> bool:
    """ASCII digits, at most 18 of them (str.isdigit takes '²' and '١', int() then fails)."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


def _cut(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."
