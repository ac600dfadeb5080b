"""What channel data a build solved against: one line per channel, kept in the lock."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from envcheck.inputs import MAX_REPODATA_BYTES, read_bytes
from envcheck.resolve.solve import is_local, local_path, resolve_channel


def _repodata_info(head: bytes) -> dict[str, Any]:
    """The repodata's ``info`` object when it comes first (as sorted JSON writes it), else {}."""
    text = head.decode("utf-8", errors="replace")
    at = text.find('"info"')
    start = text.find("{", at) if at >= 0 else -1
    if start < 0:
        return {}
    try:
        info, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def channel_data(channels: Sequence[str], platform_list: Sequence[str]) -> list[str]:
    """One line per channel saying what data the solve read: sha256 of each local repodata,
    and what a snapshot says of itself (its source lock, the real channel its URLs point at).
    """
    lines = []
    for ch in channels:
        url = resolve_channel(ch)
        if not is_local(url):
            lines.append(f"{url} (live channel, fetched at build time)")
            continue
        root = local_path(url)
        parts = []
        about: dict[str, str] = {}
        for sd in [*platform_list, "noarch"]:
            rd = root / sd / "repodata.json"
            if rd.is_file():
                data = read_bytes(rd, "channel repodata", MAX_REPODATA_BYTES)
                parts.append(f"{sd}/repodata.json sha256:{hashlib.sha256(data).hexdigest()}")
                info = _repodata_info(data[:65536])
                if isinstance(info.get("envcheck_snapshot_of"), str):
                    about["snapshot of"] = info["envcheck_snapshot_of"]
                if isinstance(info.get("base_url"), str):
                    about["packages at"] = info["base_url"].rstrip("/").rsplit("/", 1)[0]
        described = "".join(f"; {k} {v}" for k, v in about.items())
        lines.append(f"{url} ({', '.join(parts)}{described})")
    return lines
