"""Slurm hostlist expressions ("gpu[01-03,07],login1") to host names, as `scontrol show
hostnames` prints them. Pure and stdlib-only."""

from __future__ import annotations


def expand_hostlist(text: str) -> list[str]:
    """Every host a hostlist names, in order, each once."""
    out: list[str] = []
    for part in _split_top(text.strip()):
        for host in _expand_one(part):
            if host not in out:
                out.append(host)
    return out


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


def _expand_one(part: str) -> list[str]:
    open_ = part.find("[")
    if open_ < 0:
        return [part]
    close = part.find("]", open_)
    if close < 0:
        raise ValueError(f"unbalanced '[' in hostlist {part!r}")
    head, body, tail = part[:open_], part[open_ + 1 : close], part[close + 1 :]
    rest = _expand_one(tail)
    out = []
    for item in body.split(","):
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad range {item!r} in hostlist {part!r}")
        width = len(lo)
        for n in range(int(lo), int(hi if sep else lo) + 1):
            out += [f"{head}{n:0{width}d}{r}" for r in rest]
    return out
